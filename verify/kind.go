package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsonlimit"
)

// FileKind is what a file is, as far as its first JSON value shows: an
// event log, a seal, a cassette... SniffKind tells them apart so that a
// file given to the wrong flag is a usage error naming the right one,
// never a verdict about the evidence (docs/design/verdicts.md).
type FileKind string

// The kinds SniffKind knows. KindUnknown is every other file: it is read
// as what the flag says, and any defect is then reported as usual
// (a corrupted event log stays tampered).
const (
	KindUnknown      FileKind = ""
	KindEvents       FileKind = "event log"
	KindSeal         FileKind = "seal"
	KindEnvelope     FileKind = "DSSE envelope of a seal"
	KindSpec         FileKind = "seal spec"
	KindGraph        FileKind = "graph (JSON-LD)"
	KindCassette     FileKind = "cassette"
	KindHTTPCassette FileKind = "HTTP cassette"
	KindDrift        FileKind = "drift report"
	KindVerdict      FileKind = "verdict report"
	KindReplay       FileKind = "replay report"
	KindTrust        FileKind = "trust file"
	KindKeyring      FileKind = "keyring"
	KindEffects      FileKind = "effects file"
	KindAudit        FileKind = "firewall audit snapshot"
	KindPolicy       FileKind = "firewall policy"
	KindMapping      FileKind = "firewall message mapping"
	KindLegacyLog    FileKind = "agent-trace-witness 0.1.0 log"
)

// sniffLimit bounds the bytes SniffKind looks at. A first value longer
// than this (an event log header with a large tool list) is still
// classified by the members seen before the limit, or is unknown.
const sniffLimit = 1 << 20

// SniffKind classifies the data by the first JSON value it starts with:
// the member names and the "format" of its top-level object (and of an
// event log's "header"). It reads at most sniffLimit bytes and never
// fails: what it cannot tell is KindUnknown.
func SniffKind(data []byte) FileKind {
	if len(data) > sniffLimit {
		data = data[:sniffLimit]
	}
	s := sniffObject(data)
	return s.kind()
}

// sniffed is what the top-level object showed.
type sniffed struct {
	members      map[string]bool
	format       string
	headerFormat string
}

func (s sniffed) has(names ...string) bool {
	for _, n := range names {
		if !s.members[n] {
			return false
		}
	}
	return true
}

func (s sniffed) kind() FileKind {
	switch f := s.format; {
	case f == "witness-cassette":
		return KindCassette
	case f == "witness-http-cassette":
		return KindHTTPCassette
	case f == "witness-drift-report":
		return KindDrift
	case f == ReportFormat:
		return KindVerdict
	case strings.HasPrefix(f, "witness-replay"):
		return KindReplay
	case strings.HasPrefix(f, "witness-trust/"):
		return KindTrust
	case f == "witness-effects":
		return KindEffects
	case strings.HasPrefix(f, "org.social-harness/firewall-audit/"):
		return KindAudit
	case strings.HasPrefix(f, "org.social-harness/message-policy/"):
		return KindPolicy
	case strings.HasPrefix(f, "witness-message-mapping/"):
		return KindMapping
	}
	switch {
	case s.headerFormat == "witness-events" || s.has("seq", "kind", "prev"):
		return KindEvents
	case s.members["@context"] || s.members["@graph"]:
		return KindGraph
	case s.has("payloadType", "payload"):
		return KindEnvelope
	case s.has("signature", "tools") && (s.members["system_prompt_sha256"] || s.members["witness_id"]):
		return KindSeal
	case s.members["tools"] && (s.members["system_prompt"] || s.members["system_prompt_file"]) &&
		!s.members["signature"] && !s.members["system_prompt_sha256"] && !s.members["created_at"]:
		return KindSpec
	case s.has("key_id", "algorithm") && (s.members["secret"] || s.members["public_key"] || s.members["backend"]) && !s.members["seq"]:
		return KindKeyring
	case s.members["type"] && (s.members["timestamp"] || s.members["ts"]) && (s.members["payload"] || s.members["payload_sha256"]) && !s.members["seq"]:
		return KindLegacyLog
	}
	return KindUnknown
}

// sniffObject reads the member names of the first top-level object in
// data, skipping their values token by token (no value is kept whole),
// until the object ends, the data runs out or is not JSON. Nesting deeper
// than jsonlimit.MaxDepth stops it.
func sniffObject(data []byte) sniffed {
	s := sniffed{members: map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return s
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return s
		}
		name, ok := t.(string)
		if !ok {
			return s
		}
		s.members[name] = true
		switch name {
		case "format":
			t, err := dec.Token()
			if err != nil {
				return s
			}
			if str, ok := t.(string); ok {
				s.format = str
			} else if !skipRest(dec, t, 1) {
				return s
			}
		case "header":
			if !sniffHeader(dec, &s) {
				return s
			}
		default:
			t, err := dec.Token()
			if err != nil || !skipRest(dec, t, 1) {
				return s
			}
		}
	}
	return s
}

// sniffHeader reads an event log header's format and skips the rest.
func sniffHeader(dec *json.Decoder, s *sniffed) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	if t != json.Delim('{') {
		return skipRest(dec, t, 1)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		v, err := dec.Token()
		if err != nil {
			return false
		}
		if str, ok := v.(string); ok && k == "format" {
			s.headerFormat = str
			continue
		}
		if !skipRest(dec, v, 2) {
			return false
		}
	}
	_, err = dec.Token() // '}'
	return err == nil
}

// skipRest skips the value that began with token t, at nesting depth
// depth; false when the data ends, is not JSON or nests too deep.
func skipRest(dec *json.Decoder, t json.Token, depth int) bool {
	d, ok := t.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return true
	}
	open := 1
	for open > 0 {
		if depth+open > jsonlimit.MaxDepth {
			return false
		}
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				open++
			} else {
				open--
			}
		}
	}
	return true
}

// kindHint names the flag or command that reads a file of kind k.
func kindHint(k FileKind) string {
	switch k {
	case KindEvents:
		return "give it to --events (witness verify --events FILE [--seal SEAL])"
	case KindSeal, KindEnvelope:
		return "give it to --seal (witness verify --seal FILE)"
	case KindSpec:
		return "sign it first: witness seal --spec FILE --out seal.json, then give the seal to --seal"
	case KindGraph:
		return "give it to --graph (witness verify --seal SEAL --graph FILE [--events LOG])"
	case KindCassette:
		return "a cassette is replayed, not verified: witness serve --cassette FILE (the event log of the recording is the events.jsonl beside it)"
	case KindHTTPCassette:
		return "an HTTP cassette is replayed, not verified: witness serve --cassette FILE --listen ADDR"
	case KindDrift:
		return "a drift report is judged by witness drift FILE"
	case KindVerdict:
		return "this is the output of witness verify --json; verify the event log and seal it names"
	case KindReplay:
		return "this is the output of witness replay; verify the event log it was made from"
	case KindTrust:
		return "give it to --trust (public keys to verify signatures with)"
	case KindKeyring:
		return "give it to --keyring"
	case KindEffects:
		return "an effects file is appended to a log: witness capture append"
	case KindAudit:
		return "a firewall audit snapshot is checked by witness firewall audit verify"
	case KindPolicy, KindMapping:
		return "this is firewall configuration: witness firewall policy check, witness firewall evaluate"
	case KindLegacyLog:
		return "convert it first: witness import --from atw-0.1.0 FILE --out events.jsonl, then give events.jsonl to --events"
	}
	return ""
}

// wrongKind is the usage error for a file of kind got given to flag, which
// reads the kinds want.
func wrongKind(flag, name string, got FileKind, want ...FileKind) error {
	for _, w := range want {
		if got == w {
			return nil
		}
	}
	if got == KindUnknown {
		return nil
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = article(w)
	}
	return exitcode.New(exitcode.Usage,
		fmt.Errorf("%s %s is %s, not %s", flag, name, article(got), strings.Join(names, " or ")),
		"this is "+article(got)+": "+kindHint(got))
}

// article puts "a" or "an" before the kind's name.
func article(k FileKind) string {
	if s := string(k); s != "" && strings.ContainsRune("aeiouAEIOUH", rune(s[0])) {
		return "an " + s
	}
	return "a " + string(k)
}

// sniffReader wraps rd so its first bytes can be classified without
// consuming them, and returns the kind.
func sniffReader(rd io.Reader) (*bufio.Reader, FileKind) {
	br, ok := rd.(*bufio.Reader)
	if !ok || br.Size() < sniffLimit {
		br = bufio.NewReaderSize(rd, sniffLimit)
	}
	head, err := br.Peek(sniffLimit)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) && len(head) == 0 {
		return br, KindUnknown
	}
	return br, SniffKind(head)
}
