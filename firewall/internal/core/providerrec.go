package core

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/agent-trace-witness/witness/graph"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// Usage is what one decision-provider call consumed, as the provider
// reported it.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// Typed operational failures of a decision provider (the seed: "a typed
// operational failure"; "unreachable", "a rate limit or a server error",
// "invalid response", "exceeded its budget", "timeouts and cancellation
// are explicit").
const (
	FailureTimeout         = "timeout"
	FailureUnreachable     = "unreachable"
	FailureRateLimited     = "rate-limited"
	FailureServerError     = "server-error"
	FailureInvalidResponse = "invalid-response"
	FailureLimitExceeded   = "limit-exceeded"
	FailureCancelled       = "cancelled"
)

var failureKinds = map[string]bool{FailureTimeout: true, FailureUnreachable: true, FailureRateLimited: true,
	FailureServerError: true, FailureInvalidResponse: true, FailureLimitExceeded: true, FailureCancelled: true}

// ProviderFailure is a typed operational failure kept in a check's trace
// in place of a judgment.
type ProviderFailure struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// ProviderError is the error a provider returns for a typed operational
// failure. It is an ErrUnavailable (the rule's check is unavailable), and
// the engine keeps it in the trace so a later re-evaluation replays it.
type ProviderError struct {
	Failure ProviderFailure
	// Provider, Model and LatencyMs describe the failed attempt (optional).
	Provider, Model string
	LatencyMs       *float64
}

func (e *ProviderError) Error() string {
	s := "decision provider " + e.Failure.Kind
	if e.Failure.Detail != "" {
		s += ": " + e.Failure.Detail
	}
	return s
}

// Unwrap makes a ProviderError an ErrUnavailable.
func (e *ProviderError) Unwrap() error { return ErrUnavailable }

// failureEntry returns the trace entry of a typed failure for question q,
// or false when err is not one.
func failureEntry(q Question, err error) (Judgment, bool) {
	var pe *ProviderError
	if !errors.As(err, &pe) {
		return Judgment{}, false
	}
	f := pe.Failure
	return Judgment{Key: q.Key, Stage: q.Stage, Rule: q.Rule, Provider: pe.Provider, Model: pe.Model, LatencyMs: pe.LatencyMs, Failure: &f}, true
}

// readJudgmentExtras reads the optional members of a trace entry beyond
// the judgment proper: subjects, provider and model identity, usage,
// latency and a typed failure. A failure entry carries no choice.
func readJudgmentExtras(jr *jsontree.ObjectReader, j *Judgment) {
	if jr.Has("subjects") {
		j.Subjects = jr.Strings("subjects", false)
	}
	j.Provider = jr.String("provider", false)
	j.Model = jr.String("model", false)
	if u := jr.Value("usage"); u != nil && u.Kind != jsontree.Null {
		if ur := jr.Object("usage", false); ur != nil {
			j.Usage = &Usage{InputTokens: ur.Int("inputTokens", false), OutputTokens: ur.Int("outputTokens", false)}
			if j.Usage.InputTokens < 0 || j.Usage.OutputTokens < 0 {
				jr.Fail("usage", "token counts must not be negative")
			}
		}
	}
	if jr.Has("latencyMs") {
		// elapsed telemetry keeps the retained finite number, negative ones
		// included (a backward wall-clock adjustment)
		l := readFloat(jr, "latencyMs")
		j.LatencyMs = &l
	}
	if v := jr.Value("failure"); v != nil && v.Kind != jsontree.Null {
		if fr := jr.Object("failure", false); fr != nil {
			f := ProviderFailure{Kind: fr.String("kind", true), Detail: fr.String("detail", false)}
			if f.Kind != "" && !failureKinds[f.Kind] {
				fr.Fail("kind", fmt.Sprintf("unknown provider failure %q", f.Kind))
			}
			j.Failure = &f
		}
	}
}

// replay returns the recorded answer: the judgment, or the recorded typed
// failure as a ProviderError.
func (j Judgment) replay() (Judgment, error) {
	if j.Failure != nil {
		return Judgment{}, &ProviderError{Failure: *j.Failure, Provider: j.Provider, Model: j.Model, LatencyMs: j.LatencyMs}
	}
	return j, nil
}

// identity returns the provider and model the recorded judgments name,
// when they name exactly one of each.
func recordedIdentity(js map[string]Judgment) (provider, model string) {
	ps, ms := map[string]bool{}, map[string]bool{}
	for _, j := range js {
		if j.Provider != "" {
			ps[j.Provider] = true
		}
		if j.Model != "" {
			ms[j.Model] = true
		}
	}
	one := func(m map[string]bool) string {
		if len(m) != 1 {
			return ""
		}
		for k := range m {
			return k
		}
		return ""
	}
	return one(ps), one(ms)
}

// Graph vocabulary of the provider records a check overlay shows.
const (
	WProviderName         = graph.NSWitness + "providerName"         // provider identity, one value per provider named
	WProviderModel        = graph.NSWitness + "providerModel"        // model identity, one value per model named
	WProviderCalls        = graph.NSWitness + "providerCalls"        // answered questions
	WProviderInputTokens  = graph.NSWitness + "providerInputTokens"  // summed over the check's calls
	WProviderOutputTokens = graph.NSWitness + "providerOutputTokens" // summed over the check's calls
	WProviderLatencyMs    = graph.NSWitness + "providerLatencyMs"    // summed over the check's calls
	WProviderFailure      = graph.NSWitness + "providerFailure"      // one value per typed failure, "kind stage rule"
)

// ProviderSummary totals the provider records of one check's trace.
type ProviderSummary struct {
	Providers, Models []string
	Calls             int
	InputTokens       int64
	OutputTokens      int64
	LatencyMs         float64
	HasUsage, HasTime bool
	Failures          []string // "kind stage rule"
}

// SummarizeTrace totals a trace's provider records.
func SummarizeTrace(trace []Judgment) ProviderSummary {
	var s ProviderSummary
	ps, ms := map[string]bool{}, map[string]bool{}
	for _, j := range trace {
		if j.Provider != "" {
			ps[j.Provider] = true
		}
		if j.Model != "" {
			ms[j.Model] = true
		}
		if j.LatencyMs != nil {
			s.LatencyMs += *j.LatencyMs
			s.HasTime = true
		}
		if j.Failure != nil {
			s.Failures = append(s.Failures, j.Failure.Kind+" "+j.Stage+" "+j.Rule)
			continue
		}
		s.Calls++
		if j.Usage != nil {
			s.InputTokens += j.Usage.InputTokens
			s.OutputTokens += j.Usage.OutputTokens
			s.HasUsage = true
		}
	}
	for k := range ps {
		s.Providers = append(s.Providers, k)
	}
	for k := range ms {
		s.Models = append(s.Models, k)
	}
	sort.Strings(s.Providers)
	sort.Strings(s.Models)
	return s
}

// addProviderOverlay adds the provider records of a check record's trace
// to its overlay node: identity, calls, usage, latency, typed failures.
// A check with no provider record gets nothing.
func addProviderOverlay(n *graph.Node, l AuditLine) error {
	trace, err := readTrace(l)
	if err != nil {
		return err
	}
	if len(trace) == 0 {
		return nil
	}
	s := SummarizeTrace(trace)
	for _, p := range s.Providers {
		n.Add(WProviderName, graph.Str(p))
	}
	for _, m := range s.Models {
		n.Add(WProviderModel, graph.Str(m))
	}
	n.Add(WProviderCalls, graph.Str(strconv.Itoa(s.Calls)))
	if s.HasUsage {
		n.Add(WProviderInputTokens, graph.Str(strconv.FormatInt(s.InputTokens, 10)))
		n.Add(WProviderOutputTokens, graph.Str(strconv.FormatInt(s.OutputTokens, 10)))
	}
	if s.HasTime {
		n.Add(WProviderLatencyMs, graph.Str(strconv.FormatFloat(s.LatencyMs, 'f', -1, 64)))
	}
	for _, f := range s.Failures {
		n.Add(WProviderFailure, graph.Str(f))
	}
	return nil
}
