package core

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"regexp"
	"time"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
)

// AuditFormat is the format of an operator audit snapshot.
const AuditFormat = "org.social-harness/firewall-audit/v4"

// MaxAuditLineBytes bounds one audit line.
const MaxAuditLineBytes = 64 << 20

// Record types.
const (
	RecordStart      = "start"
	RecordCheck      = "check"
	RecordActivation = "activation"
	RecordComplete   = "complete"
)

// CheckIDPattern is the only accepted check reference format.
var CheckIDPattern = regexp.MustCompile(`^chk_[0-9a-f]{64}$`)

// StartRecord opens a snapshot.
type StartRecord struct {
	Type       string `json:"type"`
	Format     string `json:"format"`
	SnapshotID string `json:"snapshotId"`
	StartedAt  string `json:"startedAt,omitempty"`
}

// CheckRecord is one retained check.
type CheckRecord struct {
	Type         string        `json:"type"`
	Sequence     int           `json:"sequence"`
	CheckID      string        `json:"checkId"`
	Direction    string        `json:"direction"`
	Operation    string        `json:"operation"`
	Disposition  string        `json:"disposition"`
	Post         *PostRef      `json:"post"`
	Candidate    string        `json:"candidate"` // base64 of the canonical candidate message
	Input        CheckInput    `json:"input"`
	Installation AuditInstall  `json:"installation"`
	Judgment     AuditJudgment `json:"judgment"`
	Trace        []Judgment    `json:"trace"`
	Errors       []string      `json:"providerErrors,omitempty"`
	ElapsedMs    float64       `json:"elapsedMs"`
	// CollectiveFailure: see Decision.CollectiveFailure.
	CollectiveFailure string `json:"collectiveFailure,omitempty"`
}

// AuditInstall is the installation metadata a check retains.
type AuditInstall struct {
	ActiveRevision   string              `json:"activeRevision"`
	Mode             string              `json:"mode"`
	DecisionProvider *ProviderSpec       `json:"decisionProvider"`
	Provider         map[string]string   `json:"provider"`
	Chain            []map[string]string `json:"chain"`
}

// AuditJudgment is the policy judgment, kept apart from the disposition.
type AuditJudgment struct {
	Reason     string         `json:"reason"`
	DecidedBy  []DecidingRule `json:"decidedBy"`
	Cause      string         `json:"cause"`
	NextAction string         `json:"nextAction,omitempty"`
	Findings   []Finding      `json:"findings"`
	Guidance   *Guidance      `json:"guidance"`
}

// ActivationRecord is one policy activation.
type ActivationRecord struct {
	Type           string   `json:"type"`
	Sequence       int      `json:"sequence"`
	ActivatedAt    int64    `json:"activatedAt"` // Unix milliseconds
	ActiveRevision string   `json:"activeRevision"`
	AddedRuleIDs   []string `json:"addedRuleIds"`
	RemovedRuleIDs []string `json:"removedRuleIds"`
}

// CompleteRecord closes a snapshot.
type CompleteRecord struct {
	Type            string `json:"type"`
	SnapshotID      string `json:"snapshotId"`
	CheckCount      int    `json:"checkCount"`
	ActivationCount int    `json:"activationCount"`
	SHA256          string `json:"sha256"`
}

// AuditWriter streams a snapshot: start, checks, activations, complete,
// and optionally signature records.
type AuditWriter struct {
	w           io.Writer
	snapshotID  string
	digest      hash.Hash // check and activation lines (complete.sha256)
	all         hash.Hash // every line written (what signatures sign)
	checks      int
	activations int
	state       int // 0 none, 1 started, 2 activations, 3 complete, 4 signed
}

// NewAuditWriter returns a writer for a snapshot with the given id.
func NewAuditWriter(w io.Writer, snapshotID string) *AuditWriter {
	return &AuditWriter{w: w, snapshotID: snapshotID, digest: sha256.New(), all: sha256.New()}
}

func (a *AuditWriter) line(v any, digested bool) error {
	b, err := canon.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	b = append(b, '\n')
	if digested {
		a.digest.Write(b)
	}
	a.all.Write(b)
	if _, err := a.w.Write(b); err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

// Start writes the start record.
func (a *AuditWriter) Start(startedAt string) error {
	if a.state != 0 {
		return errors.New("audit: start written twice")
	}
	a.state = 1
	return a.line(StartRecord{Type: RecordStart, Format: AuditFormat, SnapshotID: a.snapshotID, StartedAt: startedAt}, false)
}

// Check writes one check record built from chk.
func (a *AuditWriter) Check(chk *Check, inst AuditInstall) error {
	if a.state != 1 {
		return errors.New("audit: check record out of order")
	}
	a.checks++
	d := chk.Decision
	rec := CheckRecord{
		Type: RecordCheck, Sequence: a.checks, CheckID: chk.CheckID,
		Direction: chk.Input.Direction, Operation: chk.Input.Candidate.Message.Operation,
		Disposition: d.Disposition, Post: chk.Input.Candidate.Post(),
		Candidate:    base64.StdEncoding.EncodeToString(chk.Input.candidateBytes),
		Input:        chk.Input,
		Installation: inst,
		Judgment: AuditJudgment{Reason: d.Reason, DecidedBy: d.DecidedBy, Cause: d.Cause, NextAction: d.NextAction,
			Findings: d.Findings, Guidance: d.Guidance},
		Trace:             chk.Trace,
		Errors:            chk.Errors,
		CollectiveFailure: d.CollectiveFailure,
		ElapsedMs:         chk.ElapsedMs,
	}
	return a.line(rec, true)
}

// Activation writes one activation record.
func (a *AuditWriter) Activation(r ActivationRecord) error {
	if a.state != 1 && a.state != 2 {
		return errors.New("audit: activation record out of order")
	}
	a.state = 2
	a.activations++
	r.Type = RecordActivation
	r.Sequence = a.activations
	return a.line(r, true)
}

// Complete writes the complete record.
func (a *AuditWriter) Complete() error {
	if a.state != 1 && a.state != 2 {
		return errors.New("audit: complete record out of order")
	}
	a.state = 3
	return a.line(CompleteRecord{Type: RecordComplete, SnapshotID: a.snapshotID, CheckCount: a.checks,
		ActivationCount: a.activations, SHA256: hex.EncodeToString(a.digest.Sum(nil))}, false)
}

// Incompleteness reasons reported by VerifyAudit.
const (
	IncompleteMissingStart    = "missing-start"
	IncompleteMissingComplete = "missing-complete"
	IncompleteSnapshotID      = "snapshot-id-mismatch"
	IncompleteCheckCount      = "check-count-mismatch"
	IncompleteActivationCount = "activation-count-mismatch"
	IncompleteDigest          = "digest-mismatch"
	IncompleteMalformed       = "malformed-line"
	IncompleteTruncated       = "truncated-line"
	IncompleteOutOfOrder      = "records-out-of-order"
)

// AuditVerdict is the result of verifying a snapshot: complete or not
// (its structure), and authenticated or not (its signature records), two
// separate questions.
type AuditVerdict struct {
	File            string `json:"file"`
	Complete        bool   `json:"complete"`
	Reason          string `json:"reason,omitempty"`
	Detail          string `json:"detail,omitempty"`
	Line            int64  `json:"line,omitempty"`
	Col             int    `json:"col,omitempty"` // 1-based byte column within Line, when known
	SnapshotID      string `json:"snapshotId,omitempty"`
	CheckCount      int    `json:"checkCount"`
	ActivationCount int    `json:"activationCount"`
	SHA256          string `json:"sha256,omitempty"`
	// Authentication is AuthAuthenticated, AuthUnauthenticated or
	// AuthTampered; AuthDetail (and AuthLine) say why.
	Authentication string                `json:"authentication"`
	AuthDetail     string                `json:"authDetail,omitempty"`
	AuthLine       int64                 `json:"authLine,omitempty"`
	Signatures     []AuditSignatureCheck `json:"signatures,omitempty"`
	// Signers counts the distinct keys (by key material) whose signatures
	// verified.
	Signers int `json:"signers"`

	requireSignature bool
}

func (v *AuditVerdict) String() string {
	if v.Complete {
		return fmt.Sprintf("complete: %s: snapshot %s, %d checks, %d activations, sha256 %s", v.File, v.SnapshotID, v.CheckCount, v.ActivationCount, v.SHA256)
	}
	if v.Line > 0 && v.Col > 0 {
		return fmt.Sprintf("incomplete: %s:%d:%d: %s: %s", v.File, v.Line, v.Col, v.Reason, v.Detail)
	}
	if v.Line > 0 {
		return fmt.Sprintf("incomplete: %s:%d: %s: %s", v.File, v.Line, v.Reason, v.Detail)
	}
	return fmt.Sprintf("incomplete: %s: %s: %s", v.File, v.Reason, v.Detail)
}

// readAuditLine returns the next line without its newline; terminated says
// it ended with '\n'. At EOF it returns a nil line.
func readAuditLine(br *bufio.Reader) (line []byte, terminated, tooLong bool, err error) {
	var out []byte
	for {
		chunk, e := br.ReadSlice('\n')
		if len(out)+len(chunk) > MaxAuditLineBytes+1 {
			for e == bufio.ErrBufferFull {
				_, e = br.ReadSlice('\n')
			}
			if e != nil && e != io.EOF {
				return nil, false, false, e
			}
			return nil, false, true, nil
		}
		out = append(out, chunk...)
		switch e {
		case nil:
			return out[:len(out)-1], true, false, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(out) == 0 {
				return nil, false, false, nil
			}
			return out, false, false, nil
		default:
			return nil, false, false, e
		}
	}
}

// LoadJudgments reads the provider judgments retained in the check records
// of a complete snapshot, for the recorded provider. An incomplete snapshot
// is refused with the Incomplete exit code.
func LoadJudgments(path string) (*RecordedProvider, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path of the recorded audit snapshot")
	}
	defer f.Close()
	var js []Judgment
	elapsed := map[string]time.Duration{}
	v, err := VerifyAudit(f, path, func(l AuditLine) error {
		t, err := readTrace(l)
		js = append(js, t...)
		if err != nil {
			return err
		}
		ev, d, err := readElapsed(l, t)
		if d > elapsed[ev] {
			elapsed[ev] = d
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, exitcode.New(exitcode.Of(err), fmt.Errorf("recorded judgments: %w", err), "the recorded provider reads only a complete, untampered snapshot; run 'witness firewall audit verify' on it")
	}
	rp := NewRecordedProvider(path, js)
	rp.elapsed = elapsed
	return rp, nil
}

// readElapsed reads how long a check record's check took: its elapsedMs
// when positive, else the summed latencyMs of its provider calls (a
// negative sum, from a backward clock adjustment, counts as unknown). It
// returns the candidate's event with it.
func readElapsed(l AuditLine, trace []Judgment) (string, time.Duration, error) {
	var perr error
	r := l.Reader(&perr)
	ms := readFloat(r, "elapsedMs")
	var ev string
	if in := r.Object("input", false); in != nil {
		if c := in.Object("candidate", false); c != nil {
			ev = c.String("event", false)
		}
	}
	if ms <= 0 {
		ms = 0
		for _, j := range trace {
			if j.LatencyMs != nil {
				ms += *j.LatencyMs
			}
		}
	}
	if ms <= 0 || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		ms = 0
	}
	return ev, time.Duration(ms * float64(time.Millisecond)), l.Err(perr)
}

// readTrace reads the provider judgments of a check record, by exact
// member names.
func readTrace(l AuditLine) ([]Judgment, error) {
	var perr error
	r := l.Reader(&perr)
	var js []Judgment
	r.Objects("trace", false, func(i int, jr *jsontree.ObjectReader) {
		j := Judgment{Key: jr.String("key", false), Stage: jr.String("stage", false), Rule: jr.String("rule", false), Choice: jr.String("choice", false)}
		j.Probability = readFloat(jr, "probability")
		if d := jr.Value("distribution"); d != nil && d.Kind != jsontree.Null {
			if d.Kind != jsontree.Object {
				jr.Fail("distribution", "want an object, got "+d.Kind.String())
				return
			}
			j.Distribution = map[string]float64{}
			dr := jr.Object("distribution", false)
			for _, m := range d.Obj {
				j.Distribution[m.Key] = readFloat(dr, m.Key)
			}
		}
		readJudgmentExtras(jr, &j)
		if perr == nil && len(j.Key) != 64 {
			jr.Fail("key", "must be 64 hex characters")
		}
		js = append(js, j)
	})
	return js, l.Err(perr)
}

// readFloat reads a number member (0 when absent).
func readFloat(r *jsontree.ObjectReader, key string) float64 {
	v := r.Value(key)
	if v == nil {
		return 0
	}
	if v.Kind != jsontree.Number {
		r.Fail(key, "want a number, got "+v.Kind.String())
		return 0
	}
	f, err := v.Num.Float64()
	if err != nil {
		r.Fail(key, "not a finite number")
	}
	return f
}
