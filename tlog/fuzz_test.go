package tlog

import (
	"path/filepath"
	"testing"
	"time"
)

// FuzzAddCheckpoint: the witness's add-checkpoint request parser never
// panics and refuses what is not a checkpoint of a log it knows, signed by
// that log.
func FuzzAddCheckpoint(f *testing.F) {
	f.Add([]byte("old 0\n\nexample.test/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— example.test/log AAAA\n"))
	f.Add([]byte("old 3\nAAAA\n\n"))
	f.Add([]byte("old x"))
	s, _ := testSigner(f, "log")
	_, vkey, err := NoteSigner("example.test/log", s)
	if err != nil {
		f.Fatal(err)
	}
	ws, _ := testSigner(f, "w")
	c, _ := NewCosigner("w", ws)
	w, err := NewWitness(WitnessOptions{Cosigner: c, Logs: []string{vkey}, State: filepath.Join(f.TempDir(), "state"), Now: func() time.Time { return time.Unix(1, 0) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if line, err := w.addCheckpoint(body); err == nil {
			t.Fatalf("cosigned a request no log key signed: %q -> %q", body, line)
		}
	})
}
