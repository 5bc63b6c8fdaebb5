package core

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Question is one named bounded-choice question the English middleware asks
// its decision provider about one rule at one stage.
type Question struct {
	Key     string   `json:"key"`   // sha256 hex of the canonical question and its input
	Stage   string   `json:"stage"` // applicability | safety | autonomy | expectation | conformance
	Rule    string   `json:"rule"`
	Options []string `json:"options"`
	// Request is the canonical JSON of the question: edition, stage,
	// options, rule, direction, candidate, facts, local agent, and the
	// history by its digest (the records are in the check's history).
	Request []byte `json:"-"`
	// Size is the serialized size of the full request (Request with the
	// history records inline), checked against maximumRequestBytes.
	Size int `json:"-"`
}

// Judgment is a provider's validated distribution over a question's options.
type Judgment struct {
	Key          string             `json:"key"`
	Stage        string             `json:"stage"`
	Rule         string             `json:"rule"`
	Choice       string             `json:"choice"`
	Probability  float64            `json:"probability"`
	Distribution map[string]float64 `json:"distribution,omitempty"`
	// Subjects are the event ids of the runtime-visible messages an
	// expectation judgment selected as its subjects (optional).
	Subjects []string `json:"subjects,omitempty"`
	// Provider and model identity, usage and latency of the call, as the
	// provider reported them (optional; see providerrec.go). A trace
	// entry with Failure records a typed operational failure instead of
	// an answer.
	Provider  string           `json:"provider,omitempty"`
	Model     string           `json:"model,omitempty"`
	Usage     *Usage           `json:"usage,omitempty"`
	LatencyMs *float64         `json:"latencyMs,omitempty"`
	Failure   *ProviderFailure `json:"failure,omitempty"`
}

// Provider is a decision provider: it answers named bounded-choice
// questions, or fails with a typed operational error (which makes the
// rule's check unavailable).
type Provider interface {
	// Provenance names the provider and model, recorded in every check.
	Provenance() map[string]string
	// Decide answers q.
	Decide(q Question) (Judgment, error)
}

// ErrUnavailable is the operational failure of a provider that cannot answer.
var ErrUnavailable = errors.New("decision provider unavailable")

// UnavailableProvider answers nothing: every English check is unavailable.
type UnavailableProvider struct{}

// Provenance implements Provider.
func (UnavailableProvider) Provenance() map[string]string {
	return map[string]string{"kind": "unavailable"}
}

// Decide implements Provider.
func (UnavailableProvider) Decide(q Question) (Judgment, error) {
	return Judgment{}, fmt.Errorf("%w: no decision provider is installed", ErrUnavailable)
}

// RecordedProvider answers from the provider judgments retained in an
// earlier audit snapshot, by question key, and is unavailable for any
// question it has no record of.
type RecordedProvider struct {
	Source    string // the audit snapshot it was read from
	judgments map[string]Judgment
	elapsed   map[string]time.Duration // by candidate event: how long its check took
}

// Elapsed returns how long the recorded check of the candidate event took
// (the longest, when a result committed several checks), 0 when the
// snapshot recorded no duration for it. It fits Runner.Elapsed.
func (r *RecordedProvider) Elapsed(event string) time.Duration {
	return r.elapsed[event]
}

// NewRecordedProvider returns a provider over the given judgments.
func NewRecordedProvider(source string, js []Judgment) *RecordedProvider {
	m := make(map[string]Judgment, len(js))
	for _, j := range js {
		if _, dup := m[j.Key]; !dup {
			m[j.Key] = j
		}
	}
	return &RecordedProvider{Source: source, judgments: m}
}

// Len returns the number of recorded judgments.
func (r *RecordedProvider) Len() int { return len(r.judgments) }

// Provenance implements Provider.
func (r *RecordedProvider) Provenance() map[string]string {
	m := map[string]string{"kind": "recorded"}
	if p, mo := recordedIdentity(r.judgments); p != "" || mo != "" {
		m["provider"], m["model"] = p, mo
	}
	return m
}

// Decide implements Provider.
func (r *RecordedProvider) Decide(q Question) (Judgment, error) {
	j, ok := r.judgments[q.Key]
	if !ok {
		return Judgment{}, fmt.Errorf("%w: no recorded judgment for question %s (%s of rule %s)", ErrUnavailable, shortKey(q.Key), q.Stage, q.Rule)
	}
	return j.replay()
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}

// validateJudgment checks a provider's answer against the question: the
// choice is an option, probabilities are in [0,1].
func validateJudgment(q Question, j Judgment) error {
	ok := false
	for _, o := range q.Options {
		if o == j.Choice {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("invalid provider response: choice %q is not an option of %s", j.Choice, q.Stage)
	}
	if !(j.Probability >= 0 && j.Probability <= 1) {
		return fmt.Errorf("invalid provider response: probability %v is out of range 0-1", j.Probability)
	}
	for o, p := range j.Distribution {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("invalid provider response: probability %v of %q is out of range 0-1", p, o)
		}
		found := false
		for _, x := range q.Options {
			if x == o {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("invalid provider response: %q is not an option of %s", o, q.Stage)
		}
	}
	return nil
}

// Uncertain reports whether a judgment is uncertain under the seed's rule:
// its choice is "unresolved", its probability is below minimumProbability,
// or another option is more probable.
func Uncertain(j Judgment, minimumProbability float64) bool {
	if j.Choice == "unresolved" || j.Probability < minimumProbability {
		return true
	}
	keys := make([]string, 0, len(j.Distribution))
	for k := range j.Distribution {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != j.Choice && j.Distribution[k] > j.Probability {
			return true
		}
	}
	return false
}
