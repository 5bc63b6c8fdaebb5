package firewall

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
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

// AuditWriter streams a snapshot: start, checks, activations, complete.
type AuditWriter struct {
	w           io.Writer
	snapshotID  string
	digest      hash.Hash
	checks      int
	activations int
	state       int // 0 none, 1 started, 2 activations, 3 complete
}

// NewAuditWriter returns a writer for a snapshot with the given id.
func NewAuditWriter(w io.Writer, snapshotID string) *AuditWriter {
	return &AuditWriter{w: w, snapshotID: snapshotID, digest: sha256.New()}
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
		Trace:  chk.Trace,
		Errors: chk.Errors,
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

// AuditVerdict is the result of verifying a snapshot.
type AuditVerdict struct {
	File            string `json:"file"`
	Complete        bool   `json:"complete"`
	Reason          string `json:"reason,omitempty"`
	Detail          string `json:"detail,omitempty"`
	Line            int64  `json:"line,omitempty"`
	SnapshotID      string `json:"snapshotId,omitempty"`
	CheckCount      int    `json:"checkCount"`
	ActivationCount int    `json:"activationCount"`
	SHA256          string `json:"sha256,omitempty"`
}

func (v *AuditVerdict) String() string {
	if v.Complete {
		return fmt.Sprintf("complete: %s: snapshot %s, %d checks, %d activations, sha256 %s", v.File, v.SnapshotID, v.CheckCount, v.ActivationCount, v.SHA256)
	}
	if v.Line > 0 {
		return fmt.Sprintf("incomplete: %s:%d: %s: %s", v.File, v.Line, v.Reason, v.Detail)
	}
	return fmt.Sprintf("incomplete: %s: %s: %s", v.File, v.Reason, v.Detail)
}

// Err returns nil for a complete snapshot and an Incomplete-coded error
// otherwise.
func (v *AuditVerdict) Err() error {
	if v.Complete {
		return nil
	}
	return exitcode.New(exitcode.Incomplete, errors.New(v.String()), "the snapshot cannot be trusted as a complete record of the daemon's checks; compare it with the daemon's other evidence")
}

// VerifyAuditFile verifies the snapshot at path. The returned error is an
// I/O failure only; incompleteness is in the verdict.
func VerifyAuditFile(path string) (*AuditVerdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read audit %s: %w", path, err), "check the path of the audit snapshot")
	}
	defer f.Close()
	return VerifyAudit(f, path, nil)
}

// VerifyAudit verifies a snapshot read from r; name is used in messages.
// When each is non-nil it is called with every check record line (without
// its newline) as it is read.
func VerifyAudit(r io.Reader, name string, each func(line []byte, lineNo int64) error) (*AuditVerdict, error) {
	v := &AuditVerdict{File: name}
	br := bufio.NewReaderSize(r, 64<<10)
	digest := sha256.New()
	var lineNo int64
	state := 0 // 0 expect start, 1 checks, 2 activations, 3 after complete
	var complete *CompleteRecord
	var completeLine int64
	var completeDigest string
	fail := func(reason, detail string) (*AuditVerdict, error) {
		v.Complete, v.Reason, v.Detail, v.Line = false, reason, detail, lineNo
		return v, nil
	}
	for {
		line, terminated, tooLong, err := readAuditLine(br)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read audit %s: %w", name, err), "")
		}
		if line == nil && !tooLong {
			break
		}
		lineNo++
		if tooLong {
			return fail(IncompleteMalformed, fmt.Sprintf("line exceeds %d bytes", MaxAuditLineBytes))
		}
		if !terminated {
			return fail(IncompleteTruncated, "the last line has no trailing newline (cut off)")
		}
		if state == 3 {
			return fail(IncompleteOutOfOrder, "a record follows the complete record")
		}
		if err := jsonlimit.CheckIn(line, name, lineNo); err != nil {
			return fail(IncompleteMalformed, err.Error())
		}
		var head struct {
			Type *string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil || !isJSONObject(line) {
			detail := "not a JSON object"
			if err != nil {
				detail = "not a JSON object: " + err.Error()
			}
			return fail(IncompleteMalformed, detail)
		}
		if head.Type == nil {
			return fail(IncompleteMalformed, "record has no \"type\"")
		}
		switch *head.Type {
		case RecordStart:
			if state != 0 {
				return fail(IncompleteOutOfOrder, "a second start record")
			}
			var s StartRecord
			if err := strictRecord(line, &s); err != nil {
				return fail(IncompleteMalformed, "start: "+err.Error())
			}
			if s.Format != AuditFormat {
				return fail(IncompleteMalformed, fmt.Sprintf("start: unsupported format %q (want %q)", s.Format, AuditFormat))
			}
			if s.SnapshotID == "" {
				return fail(IncompleteMalformed, "start: empty snapshotId")
			}
			v.SnapshotID = s.SnapshotID
			state = 1
		case RecordCheck, RecordActivation:
			if state == 0 {
				return fail(IncompleteMissingStart, "the first record is a "+*head.Type+", not start")
			}
			if *head.Type == RecordCheck {
				if state == 2 {
					return fail(IncompleteOutOfOrder, "a check record after an activation record")
				}
				var c struct {
					CheckID *string `json:"checkId"`
				}
				_ = json.Unmarshal(line, &c)
				if c.CheckID != nil && !CheckIDPattern.MatchString(*c.CheckID) {
					return fail(IncompleteMalformed, fmt.Sprintf("check: checkId %q is not chk_ and 64 lowercase hex", *c.CheckID))
				}
				v.CheckCount++
				if each != nil {
					if err := each(line, lineNo); err != nil {
						return fail(IncompleteMalformed, "check: "+err.Error())
					}
				}
			} else {
				state = 2
				v.ActivationCount++
			}
			digest.Write(line)
			digest.Write([]byte{'\n'})
		case RecordComplete:
			if state == 0 {
				return fail(IncompleteMissingStart, "the first record is complete, not start")
			}
			var c CompleteRecord
			if err := strictRecord(line, &c); err != nil {
				return fail(IncompleteMalformed, "complete: "+err.Error())
			}
			complete = &c
			completeLine = lineNo
			completeDigest = hex.EncodeToString(digest.Sum(nil))
			state = 3
		default:
			return fail(IncompleteMalformed, fmt.Sprintf("unknown record type %q", *head.Type))
		}
	}
	if state == 0 {
		lineNo = 0
		return fail(IncompleteMissingStart, "the file has no start record")
	}
	if complete == nil {
		lineNo = 0
		return fail(IncompleteMissingComplete, fmt.Sprintf("no complete record after %d checks and %d activations", v.CheckCount, v.ActivationCount))
	}
	// the complete record's claims, checked once nothing follows it
	lineNo = completeLine
	c := complete
	if c.SnapshotID != v.SnapshotID {
		return fail(IncompleteSnapshotID, fmt.Sprintf("complete names snapshot %q, start %q", c.SnapshotID, v.SnapshotID))
	}
	if c.CheckCount != v.CheckCount {
		return fail(IncompleteCheckCount, fmt.Sprintf("complete counts %d checks, the file has %d", c.CheckCount, v.CheckCount))
	}
	if c.ActivationCount != v.ActivationCount {
		return fail(IncompleteActivationCount, fmt.Sprintf("complete counts %d activations, the file has %d", c.ActivationCount, v.ActivationCount))
	}
	if c.SHA256 != completeDigest {
		return fail(IncompleteDigest, fmt.Sprintf("complete sha256 %s, the check and activation lines hash to %s", c.SHA256, completeDigest))
	}
	v.SHA256 = completeDigest
	v.Complete = true
	return v, nil
}

func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r")
	return len(t) > 0 && t[0] == '{'
}

// strictRecord decodes a start or complete record, refusing unknown fields
// and requiring every field.
func strictRecord(line []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	var need []string
	switch dst.(type) {
	case *StartRecord:
		need = []string{"type", "format", "snapshotId"}
	case *CompleteRecord:
		need = []string{"type", "snapshotId", "checkCount", "activationCount", "sha256"}
	}
	for _, k := range need {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("missing field %q", k)
		}
	}
	return nil
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
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read audit %s: %w", path, err), "check the path of the recorded audit snapshot")
	}
	defer f.Close()
	var js []Judgment
	v, err := VerifyAudit(f, path, func(line []byte, lineNo int64) error {
		var rec struct {
			Trace []Judgment `json:"trace"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		for i, j := range rec.Trace {
			if len(j.Key) != 64 {
				return fmt.Errorf("trace[%d]: key must be 64 hex characters", i)
			}
		}
		js = append(js, rec.Trace...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, exitcode.New(exitcode.Incomplete, fmt.Errorf("recorded judgments: %w", err), "the recorded provider reads only a complete snapshot; run 'witness firewall audit verify' on it")
	}
	return NewRecordedProvider(path, js), nil
}
