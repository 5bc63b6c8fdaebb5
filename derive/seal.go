package derive

import (
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/seal"
)

// LoadSealRef loads a seal (package seal) and returns the reference an
// event log header carries: its seal_ref digest and witness_id.
func LoadSealRef(path string) (*eventlog.SealRef, error) {
	s, err := seal.Load(path)
	if err != nil {
		return nil, err
	}
	return &eventlog.SealRef{Digest: s.Ref(), WitnessID: s.WitnessID}, nil
}
