package core

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
)

// RecordSignature is the type of the records that authenticate a snapshot;
// they follow the complete record (docs/formats/firewall.md, section 5).
const RecordSignature = "signature"

// AuditSignedType names what an audit signature signs (see
// AuditSignedMessage).
const AuditSignedType = "witness-firewall-audit-signature/v1"

// AuditSignedMessage returns the bytes an audit signature signs: the
// canonical JSON of {"audit": AuditFormat, "sha256": prefixSHA256, "type":
// AuditSignedType}, where prefixSHA256 is the sha256 (lowercase hex) of
// every byte of the snapshot before its first signature record: start,
// checks, activations and complete, newlines included. The type keeps an
// audit signature from being taken for a seal or session_end signature.
func AuditSignedMessage(prefixSHA256 string) []byte {
	b, _ := canon.Marshal(map[string]string{"audit": AuditFormat, "sha256": prefixSHA256, "type": AuditSignedType})
	return b
}

// SignatureRecord is one signature over a snapshot.
type SignatureRecord struct {
	Type   string `json:"type"`
	KeyID  string `json:"keyId,omitempty"`
	Alg    string `json:"alg"`    // hmac-sha256 | ed25519
	SHA256 string `json:"sha256"` // the sha256 of the bytes before the first signature record
	Sig    string `json:"sig"`    // lowercase hex (hmac-sha256) | standard base64 (ed25519)
}

// Authentication outcomes of a snapshot (AuditVerdict.Authentication).
const (
	// AuthAuthenticated: a key the verifier trusts, not revoked, signed
	// exactly the snapshot's bytes, and no signature failed.
	AuthAuthenticated = "authenticated"
	// AuthUnauthenticated: no signature record, or none the keys given can
	// check. Not an error unless a signature is required.
	AuthUnauthenticated = "unauthenticated"
	// AuthTampered: a signature does not verify (or was made over other
	// bytes), or was made by a revoked key.
	AuthTampered = "tampered"
)

// Signature check statuses (AuditSignatureCheck.Status).
const (
	SigValid     = "valid"       // a trusted key signed these bytes
	SigDuplicate = "duplicate"   // valid, by a signer that already signed (counted once)
	SigInvalid   = "invalid"     // does not verify, or covers other bytes
	SigRevoked   = "revoked"     // made by a revoked key
	SigUnknown   = "unknown_key" // no key given holds it
	SigUnchecked = "unchecked"   // no keys were given
)

// AuditSignatureCheck is the outcome for one signature record.
type AuditSignatureCheck struct {
	Line   int64  `json:"line"`
	KeyID  string `json:"keyId,omitempty"`
	Alg    string `json:"alg"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	Signer string `json:"signer,omitempty"` // the signer's identity (key material), when valid
}

// AuditVerifyOptions control VerifyAuditWith.
type AuditVerifyOptions struct {
	// Keys check the signature records (a keyring and/or trust file as one
	// set of key material); nil leaves them unchecked (unauthenticated).
	Keys *keyring.Verifier
	// RequireSignature makes an unauthenticated snapshot an error
	// (exit code Incomplete) even when it is complete.
	RequireSignature bool
	// Each, when set, is called with every check record as it is read.
	Each func(AuditLine) error
}

// AuditLine is one check record as VerifyAudit read it: strictly parsed
// (one JSON object, unique member names at every depth in any letter case,
// nesting within jsonlimit.MaxDepth).
type AuditLine struct {
	File string
	No   int64           // 1-based line number
	Raw  []byte          // the line without its newline
	Tree *jsontree.Value // the parsed record
}

// Reader returns a reader of the record's members by exact name; its
// errors (collected in *errp) name file, line and field.
func (l AuditLine) Reader(errp *error) *jsontree.ObjectReader {
	return jsontree.NewObjectReader(l.File, "", l.Tree, errp)
}

// Err places a reader error on the record's line.
func (l AuditLine) Err(err error) error {
	var je *jsontree.Error
	if errors.As(err, &je) {
		c := *je
		c.Line = l.No
		return &c
	}
	return err
}

// parseAuditLine is the one reader of audit lines: nesting within the
// shared limit (checked before any decoder runs), one JSON object, no
// member name twice at any depth, not even in another letter case. The
// error names the field; its line is lineNo.
func parseAuditLine(line []byte, name string, lineNo int64) (*jsontree.Value, error) {
	if err := jsonlimit.CheckIn(line, name, lineNo); err != nil {
		le := err.(*jsonlimit.Error)
		return nil, &jsontree.Error{File: name, Line: int64(le.Line), Col: le.Col, Msg: fmt.Sprintf("nesting deeper than %d levels", jsonlimit.MaxDepth), Err: le}
	}
	if err := jsontree.CheckNames(line, name); err != nil {
		return nil, lineErr(err, lineNo)
	}
	v, err := jsontree.Parse(line, name)
	if err != nil {
		return nil, lineErr(err, lineNo)
	}
	if v.Kind != jsontree.Object {
		return nil, &jsontree.Error{File: name, Line: lineNo, Msg: "not a JSON object"}
	}
	return v, nil
}

// detail is a reader error without its file:line prefix.
func detail(err error) string {
	var je *jsontree.Error
	if errors.As(err, &je) {
		return jsontree.Format("", 0, 0, je.Field, je.Msg)
	}
	return err.Error()
}

// VerifyAuditFile verifies the snapshot at path, its structure only (see
// VerifyAuditFileWith).
func VerifyAuditFile(path string) (*AuditVerdict, error) {
	return VerifyAuditFileWith(path, AuditVerifyOptions{})
}

// VerifyAuditFileWith verifies the snapshot at path. The returned error is
// an I/O failure only; the verdict says complete or not, and authenticated
// or not.
func VerifyAuditFileWith(path string, opts AuditVerifyOptions) (*AuditVerdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path of the audit snapshot")
	}
	defer f.Close()
	return VerifyAuditWith(f, path, opts)
}

// VerifyAudit verifies a snapshot read from r; name is used in messages.
// When each is non-nil it is called with every check record as it is read.
// Signatures are not checked (see VerifyAuditWith).
func VerifyAudit(r io.Reader, name string, each func(AuditLine) error) (*AuditVerdict, error) {
	return VerifyAuditWith(r, name, AuditVerifyOptions{Each: each})
}

// VerifyAuditWith verifies a snapshot read from r: its structure (start,
// checks, activations, complete; counts and digest) and its signature
// records. The returned error is an I/O failure only.
func VerifyAuditWith(r io.Reader, name string, opts AuditVerifyOptions) (*AuditVerdict, error) {
	sc := &auditScan{
		v:      &AuditVerdict{File: name, requireSignature: opts.RequireSignature},
		name:   name,
		opts:   opts,
		digest: sha256.New(),
		prefix: sha256.New(),
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, terminated, tooLong, err := readAuditLine(br)
		if err != nil {
			return nil, exitcode.New(exitcode.Failure, fmt.Errorf("read audit %s: %w", name, err), "")
		}
		if line == nil && !tooLong {
			break
		}
		sc.lineNo++
		if tooLong {
			sc.fail(IncompleteMalformed, fmt.Sprintf("line exceeds %d bytes", MaxAuditLineBytes))
			sc.unread = true
			continue
		}
		if !terminated {
			sc.fail(IncompleteTruncated, "the last line has no trailing newline (cut off)")
			break
		}
		sc.line(line)
	}
	return sc.finish(), nil
}

// auditScan is the state of VerifyAuditWith's one pass over a snapshot.
type auditScan struct {
	v      *AuditVerdict
	name   string
	opts   AuditVerifyOptions
	digest hash.Hash // check and activation lines (the complete record's sha256)
	prefix hash.Hash // every byte before the first signature record
	lineNo int64
	state  int // 0 expect start, 1 checks, 2 activations, 3 after complete, 4 signatures
	failed bool
	unread bool // a line over the limit was skipped: the signed bytes are unknown

	complete                     *CompleteRecord
	completeLine                 int64
	completeDigest, prefixDigest string
	sigs                         []sigRecord
}

// fail records the first failure, at the current line.
func (sc *auditScan) fail(reason, detail string) {
	if !sc.failed {
		sc.failed = true
		sc.v.Complete, sc.v.Reason, sc.v.Detail, sc.v.Line = false, reason, detail, sc.lineNo
	}
}

// recordType parses a line and reads its type.
func (sc *auditScan) recordType(line []byte) (*jsontree.Value, string, error) {
	tree, err := parseAuditLine(line, sc.name, sc.lineNo)
	if err != nil {
		return nil, "", err
	}
	switch t := tree.Get("type"); {
	case t == nil:
		return tree, "", &jsontree.Error{File: sc.name, Line: sc.lineNo, Msg: `record has no "type"`}
	case t.Kind != jsontree.String:
		return tree, "", &jsontree.Error{File: sc.name, Line: sc.lineNo, Field: "type", Msg: "want a string, got " + t.Kind.String()}
	default:
		return tree, t.Str, nil
	}
}

// line takes one whole line of the snapshot.
func (sc *auditScan) line(line []byte) {
	tree, typ, perr := sc.recordType(line)
	if typ == RecordSignature {
		sc.signature(tree)
		return
	}
	if sc.state == 4 {
		sc.fail(IncompleteOutOfOrder, "a "+orType(typ)+" record after the signature records")
		return
	}
	sc.prefix.Write(line)
	sc.prefix.Write([]byte{'\n'})
	if sc.failed {
		// keep reading for the signature records, which cover the
		// bytes whatever their structure
		return
	}
	if perr != nil {
		sc.fail(IncompleteMalformed, detail(perr))
		var je *jsontree.Error
		if errors.As(perr, &je) && je.Col > 0 {
			sc.v.Col = je.Col
		}
		return
	}
	if sc.state == 3 {
		sc.fail(IncompleteOutOfOrder, "a record follows the complete record")
		return
	}
	switch typ {
	case RecordStart:
		sc.start(tree)
	case RecordCheck, RecordActivation:
		sc.entry(typ, tree, line)
	case RecordComplete:
		sc.completeRecord(tree)
	default:
		sc.fail(IncompleteMalformed, fmt.Sprintf("unknown record type %q", typ))
	}
}

// signature takes a signature record: the bytes before the first one are
// what the signatures cover.
func (sc *auditScan) signature(tree *jsontree.Value) {
	if sc.state < 4 {
		sc.prefixDigest = hex.EncodeToString(sc.prefix.Sum(nil))
		if sc.state != 3 && !sc.failed {
			sc.fail(IncompleteOutOfOrder, "a signature record before the complete record")
		}
		sc.state = 4
	}
	s, err := readSignatureRecord(tree, sc.name, sc.lineNo)
	if err != nil {
		sc.fail(IncompleteMalformed, "signature: "+detail(err))
		return
	}
	sc.sigs = append(sc.sigs, s)
}

func (sc *auditScan) start(tree *jsontree.Value) {
	if sc.state != 0 {
		sc.fail(IncompleteOutOfOrder, "a second start record")
		return
	}
	s, err := readStartRecord(tree, sc.name, sc.lineNo)
	if err != nil {
		sc.fail(IncompleteMalformed, "start: "+detail(err))
		return
	}
	sc.v.SnapshotID = s.SnapshotID
	sc.state = 1
}

// entry takes a check or an activation record: checks come first.
func (sc *auditScan) entry(typ string, tree *jsontree.Value, line []byte) {
	if sc.state == 0 {
		sc.fail(IncompleteMissingStart, "the first record is a "+typ+", not start")
		return
	}
	if typ == RecordCheck {
		if sc.state == 2 {
			sc.fail(IncompleteOutOfOrder, "a check record after an activation record")
			return
		}
		if c := tree.Get("checkId"); c != nil && (c.Kind != jsontree.String || !CheckIDPattern.MatchString(c.Str)) {
			sc.fail(IncompleteMalformed, fmt.Sprintf("check: checkId %s is not chk_ and 64 lowercase hex", jsonText(c)))
			return
		}
		sc.v.CheckCount++
		if sc.opts.Each != nil {
			if err := sc.opts.Each(AuditLine{File: sc.name, No: sc.lineNo, Raw: line, Tree: tree}); err != nil {
				sc.fail(IncompleteMalformed, "check: "+detail(err))
				return
			}
		}
	} else {
		sc.state = 2
		sc.v.ActivationCount++
	}
	sc.digest.Write(line)
	sc.digest.Write([]byte{'\n'})
}

func (sc *auditScan) completeRecord(tree *jsontree.Value) {
	if sc.state == 0 {
		sc.fail(IncompleteMissingStart, "the first record is complete, not start")
		return
	}
	c, err := readCompleteRecord(tree, sc.name, sc.lineNo)
	if err != nil {
		sc.fail(IncompleteMalformed, "complete: "+detail(err))
		return
	}
	sc.complete = &c
	sc.completeLine = sc.lineNo
	sc.completeDigest = hex.EncodeToString(sc.digest.Sum(nil))
	sc.state = 3
}

// finish checks the signatures, then the complete record's claims once
// nothing follows it.
func (sc *auditScan) finish() *AuditVerdict {
	v := sc.v
	if sc.state < 4 {
		sc.prefixDigest = hex.EncodeToString(sc.prefix.Sum(nil))
	}
	if sc.unread {
		sc.prefixDigest = ""
	}
	v.checkSignatures(sc.sigs, sc.prefixDigest, sc.opts.Keys)
	if sc.failed {
		return v
	}
	sc.lineNo = 0
	if sc.state == 0 {
		sc.fail(IncompleteMissingStart, "the file has no start record")
		return v
	}
	if sc.complete == nil {
		sc.fail(IncompleteMissingComplete, fmt.Sprintf("no complete record after %d checks and %d activations", v.CheckCount, v.ActivationCount))
		return v
	}
	sc.lineNo = sc.completeLine
	c := sc.complete
	switch {
	case c.SnapshotID != v.SnapshotID:
		sc.fail(IncompleteSnapshotID, fmt.Sprintf("complete names snapshot %q, start %q", c.SnapshotID, v.SnapshotID))
	case c.CheckCount != v.CheckCount:
		sc.fail(IncompleteCheckCount, fmt.Sprintf("complete counts %d checks, the file has %d", c.CheckCount, v.CheckCount))
	case c.ActivationCount != v.ActivationCount:
		sc.fail(IncompleteActivationCount, fmt.Sprintf("complete counts %d activations, the file has %d", c.ActivationCount, v.ActivationCount))
	case c.SHA256 != sc.completeDigest:
		sc.fail(IncompleteDigest, fmt.Sprintf("complete sha256 %s, the check and activation lines hash to %s", c.SHA256, sc.completeDigest))
	default:
		v.SHA256 = sc.completeDigest
		v.Complete = true
	}
	return v
}

func orType(t string) string {
	if t == "" {
		return "malformed"
	}
	return t
}

func jsonText(v *jsontree.Value) string {
	if v.Kind == jsontree.String {
		return fmt.Sprintf("%q", v.Str)
	}
	return "(a " + v.Kind.String() + ")"
}

type sigRecord struct {
	SignatureRecord
	line int64
}

func lineErr(err error, lineNo int64) error {
	var je *jsontree.Error
	if errors.As(err, &je) {
		je.Line = lineNo
	}
	return err
}

func readStartRecord(v *jsontree.Value, name string, lineNo int64) (StartRecord, error) {
	var perr error
	r := jsontree.NewObjectReader(name, "", v, &perr)
	s := StartRecord{Type: r.String("type", true), Format: r.String("format", true), SnapshotID: r.String("snapshotId", true)}
	s.StartedAt = r.String("startedAt", false)
	r.Done()
	if perr == nil && s.Format != AuditFormat {
		r.Fail("format", fmt.Sprintf("unsupported format %q (want %q)", s.Format, AuditFormat))
	}
	if perr == nil && s.SnapshotID == "" {
		r.Fail("snapshotId", "empty")
	}
	return s, lineErr(perr, lineNo)
}

func readCompleteRecord(v *jsontree.Value, name string, lineNo int64) (CompleteRecord, error) {
	var perr error
	r := jsontree.NewObjectReader(name, "", v, &perr)
	c := CompleteRecord{Type: r.String("type", true), SnapshotID: r.String("snapshotId", true),
		CheckCount: int(r.Int("checkCount", true)), ActivationCount: int(r.Int("activationCount", true)), SHA256: r.String("sha256", true)}
	r.Done()
	return c, lineErr(perr, lineNo)
}

func readSignatureRecord(v *jsontree.Value, name string, lineNo int64) (sigRecord, error) {
	if v == nil {
		return sigRecord{}, errors.New("not a JSON object")
	}
	var perr error
	r := jsontree.NewObjectReader(name, "", v, &perr)
	s := SignatureRecord{Type: r.String("type", true), Alg: r.String("alg", true), SHA256: r.String("sha256", true), Sig: r.String("sig", true)}
	if r.Has("keyId") {
		s.KeyID = r.String("keyId", true)
		if perr == nil && s.KeyID == "" {
			r.Fail("keyId", "must be non-empty when present")
		}
	}
	r.Done()
	switch {
	case perr != nil:
	case s.Alg != keyring.SigHMACSHA256 && s.Alg != keyring.SigEd25519:
		r.Fail("alg", fmt.Sprintf("unknown algorithm %q (known: hmac-sha256, ed25519)", s.Alg))
	case !isLowerHex64(s.SHA256):
		r.Fail("sha256", "want 64 lowercase hex digits")
	}
	return sigRecord{SignatureRecord: s, line: lineNo}, lineErr(perr, lineNo)
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkSignatures judges the signature records against the bytes before
// them (prefixDigest) with keys; a signer counts once however many labels
// it signs under.
func (v *AuditVerdict) checkSignatures(sigs []sigRecord, prefixDigest string, keys *keyring.Verifier) {
	v.Authentication = AuthUnauthenticated
	if len(sigs) == 0 {
		v.AuthDetail = "no signature record"
		return
	}
	msg := AuditSignedMessage(prefixDigest)
	signers := map[string]string{}
	tampered, valid := false, 0
	for _, s := range sigs {
		c := AuditSignatureCheck{Line: s.line, KeyID: s.KeyID, Alg: s.Alg}
		switch {
		case prefixDigest == "":
			c.Status, c.Detail = SigUnchecked, fmt.Sprintf("a line over %d bytes was not read, so the signed bytes are unknown", MaxAuditLineBytes)
		case s.SHA256 != prefixDigest:
			c.Status = SigInvalid
			c.Detail = fmt.Sprintf("signed sha256 %s, but the records before the signature hash to %s: the snapshot changed after it was signed", s.SHA256, prefixDigest)
		case keys == nil:
			c.Status, c.Detail = SigUnchecked, "no keyring or trust file given to check it"
		default:
			signed, err := keys.Check(s.KeyID, s.Alg, msg, s.Sig)
			switch {
			case err == nil:
				c.Signer = signed.Identity
				if first, dup := signers[signed.Identity]; dup {
					c.Status, c.Detail = SigDuplicate, "the same key as the signature on line "+first+": one signer, counted once"
				} else {
					c.Status, c.Detail = SigValid, "verified with "+signed.Source
					if signed.KeyID != "" && signed.KeyID != s.KeyID {
						c.Detail += " key " + signed.KeyID
					}
					signers[signed.Identity] = fmt.Sprint(s.line)
					valid++
				}
			case errors.Is(err, keyring.ErrRevoked):
				c.Status, c.Detail = SigRevoked, err.Error()
			case errors.Is(err, keyring.ErrBadSignature), errors.Is(err, keyring.ErrAlgorithm):
				c.Status, c.Detail = SigInvalid, err.Error()
			default:
				c.Status, c.Detail = SigUnknown, err.Error()
			}
		}
		if c.Status == SigInvalid || c.Status == SigRevoked {
			tampered = true
		}
		v.Signatures = append(v.Signatures, c)
	}
	v.Signers = valid
	switch {
	case tampered:
		v.Authentication = AuthTampered
		for _, c := range v.Signatures {
			if c.Status == SigInvalid || c.Status == SigRevoked {
				v.AuthLine = c.Line
				v.AuthDetail = fmt.Sprintf("signature by key %s (%s) %s: %s", orNone(c.KeyID), c.Alg, c.Status, c.Detail)
				break
			}
		}
	case valid > 0:
		v.Authentication = AuthAuthenticated
		var ids []string
		for _, c := range v.Signatures {
			if c.Status == SigValid {
				ids = append(ids, fmt.Sprintf("key %s (%s, signer %s)", orNone(c.KeyID), c.Alg, keyring.ShortIdentity(c.Signer)))
			}
		}
		v.AuthDetail = "signed by " + strings.Join(ids, ", ")
	default:
		c := v.Signatures[0]
		v.AuthLine = c.Line
		v.AuthDetail = fmt.Sprintf("signed by key %s (%s), which no key given can check: %s", orNone(c.KeyID), c.Alg, c.Detail)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// AuthString is the authentication line of the verdict:
// "authenticated: FILE: ...", "unauthenticated: FILE[:LINE]: ..." or
// "tampered: FILE:LINE: ...".
func (v *AuditVerdict) AuthString() string {
	if v.AuthLine > 0 {
		return fmt.Sprintf("%s: %s:%d: %s", v.Authentication, v.File, v.AuthLine, v.AuthDetail)
	}
	return fmt.Sprintf("%s: %s: %s", v.Authentication, v.File, v.AuthDetail)
}

// Err returns nil for a complete snapshot whose signatures (if any) are
// intact, and otherwise an error carrying the exit code: Tampered when a
// signature does not verify or was made by a revoked key (whatever the
// structure), Incomplete when the structure is incomplete, or when a
// signature was required and the snapshot is unauthenticated.
func (v *AuditVerdict) Err() error {
	switch {
	case v.Authentication == AuthTampered:
		return exitcode.New(exitcode.Tampered, errors.New(v.AuthString()),
			"the snapshot's bytes are not what the key signed, or the key was revoked; get the original snapshot from its author")
	case !v.Complete:
		return exitcode.New(exitcode.Incomplete, errors.New(v.String()), "the snapshot cannot be trusted as a complete record of the daemon's checks; compare it with the daemon's other evidence")
	case v.requireSignature && v.Authentication != AuthAuthenticated:
		return exitcode.New(exitcode.Incomplete, errors.New(v.AuthString()),
			"sign snapshots with 'witness firewall evaluate --keyring KEYS --out FILE', and verify with the keyring or trust file that holds the key (--keyring, --trust)")
	}
	return nil
}

// Sign writes one signature record per signer after the complete
// record: each signs AuditSignedMessage over every byte written before.
func (a *AuditWriter) Sign(signers ...keyring.Signer) error {
	if a.state != 3 {
		return errors.New("audit: signature before the complete record")
	}
	if len(signers) == 0 {
		return nil
	}
	sum := hex.EncodeToString(a.all.Sum(nil))
	msg := AuditSignedMessage(sum)
	for _, s := range signers {
		sig, err := s.Sign(msg)
		if err != nil {
			return fmt.Errorf("sign audit with key %s: %w", s.KeyID(), err)
		}
		if err := a.line(SignatureRecord{Type: RecordSignature, KeyID: s.KeyID(), Alg: s.Algorithm(), SHA256: sum, Sig: sig}, false); err != nil {
			return err
		}
	}
	a.state = 4
	return nil
}
