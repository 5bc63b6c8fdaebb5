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

// fileKind is what a file is, as far as its first JSON value shows: an
// event log, a seal, a cassette... SniffKind tells them apart so that a
// file given to the wrong flag is a usage error naming the right one,
// never a verdict about the evidence (docs/design/verdicts.md).
type fileKind string

// The kinds SniffKind knows. KindUnknown is every other file: it is read
// as what the flag says, and any defect is then reported as usual
// (a corrupted event log stays tampered).
const (
	kindUnknown      fileKind = ""
	kindEvents       fileKind = "event log"
	kindSeal         fileKind = "seal"
	kindEnvelope     fileKind = "DSSE envelope of a seal"
	kindSpec         fileKind = "seal spec"
	kindGraph        fileKind = "graph (JSON-LD)"
	kindCassette     fileKind = "cassette"
	kindHTTPCassette fileKind = "HTTP cassette"
	kindDrift        fileKind = "drift report"
	kindVerdict      fileKind = "verdict report"
	kindReplay       fileKind = "replay report"
	kindTrust        fileKind = "trust file"
	kindKeyring      fileKind = "keyring"
	kindEffects      fileKind = "effects file"
	kindAudit        fileKind = "firewall audit snapshot"
	kindPolicy       fileKind = "firewall policy"
	kindMapping      fileKind = "firewall message mapping"
	kindLegacyLog    fileKind = "agent-trace-witness 0.1.0 log"
)

// sniffLimit bounds the bytes SniffKind looks at. A first value longer
// than this (an event log header with a large tool list) is still
// classified by the members seen before the limit, or is unknown.
const sniffLimit = 1 << 20

// sniffKind classifies the data by the first JSON value it starts with:
// the member names and the "format" of its top-level object (and of an
// event log's "header"). It reads at most sniffLimit bytes and never
// fails: what it cannot tell is KindUnknown.
func sniffKind(data []byte) fileKind {
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

func (s sniffed) kind() fileKind {
	switch f := s.format; {
	case f == "witness-cassette":
		return kindCassette
	case f == "witness-http-cassette":
		return kindHTTPCassette
	case f == "witness-drift-report":
		return kindDrift
	case f == reportFormat:
		return kindVerdict
	case strings.HasPrefix(f, "witness-replay"):
		return kindReplay
	case strings.HasPrefix(f, "witness-trust/"):
		return kindTrust
	case f == "witness-effects":
		return kindEffects
	case strings.HasPrefix(f, "org.social-harness/firewall-audit/"):
		return kindAudit
	case strings.HasPrefix(f, "org.social-harness/message-policy/"):
		return kindPolicy
	case strings.HasPrefix(f, "witness-message-mapping/"):
		return kindMapping
	}
	switch {
	case s.headerFormat == "witness-events" || s.has("seq", "kind", "prev"):
		return kindEvents
	case s.members["@context"] || s.members["@graph"]:
		return kindGraph
	case s.has("payloadType", "payload"):
		return kindEnvelope
	case s.has("signature", "tools") && (s.members["system_prompt_sha256"] || s.members["witness_id"]):
		return kindSeal
	case s.members["tools"] && (s.members["system_prompt"] || s.members["system_prompt_file"]) &&
		!s.members["signature"] && !s.members["system_prompt_sha256"] && !s.members["created_at"]:
		return kindSpec
	case s.has("key_id", "algorithm") && (s.members["secret"] || s.members["public_key"] || s.members["backend"]) && !s.members["seq"]:
		return kindKeyring
	case s.members["type"] && (s.members["timestamp"] || s.members["ts"]) && (s.members["payload"] || s.members["payload_sha256"]) && !s.members["seq"]:
		return kindLegacyLog
	}
	return kindUnknown
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
func kindHint(k fileKind) string {
	switch k {
	case kindEvents:
		return "give it to --events (witness verify --events FILE [--seal SEAL])"
	case kindSeal, kindEnvelope:
		return "give it to --seal (witness verify --seal FILE)"
	case kindSpec:
		return "sign it first: witness seal --spec FILE --out seal.json, then give the seal to --seal"
	case kindGraph:
		return "give it to --graph (witness verify --seal SEAL --graph FILE [--events LOG])"
	case kindCassette:
		return "a cassette is replayed, not verified: witness serve --cassette FILE (the event log of the recording is the events.jsonl beside it)"
	case kindHTTPCassette:
		return "an HTTP cassette is replayed, not verified: witness serve --cassette FILE --listen ADDR"
	case kindDrift:
		return "a drift report is judged by witness drift FILE"
	case kindVerdict:
		return "this is the output of witness verify --json; verify the event log and seal it names"
	case kindReplay:
		return "this is the output of witness replay; verify the event log it was made from"
	case kindTrust:
		return "give it to --trust (public keys to verify signatures with)"
	case kindKeyring:
		return "give it to --keyring"
	case kindEffects:
		return "an effects file is appended to a log: witness capture append"
	case kindAudit:
		return "a firewall audit snapshot is checked by witness firewall audit verify"
	case kindPolicy, kindMapping:
		return "this is firewall configuration: witness firewall policy check, witness firewall evaluate"
	case kindLegacyLog:
		return "convert it first: witness import --from atw-0.1.0 FILE --out events.jsonl, then give events.jsonl to --events"
	}
	return ""
}

// wrongKind is the usage error for a file of kind got given to flag, which
// reads the kinds want.
func wrongKind(flag, name string, got fileKind, want ...fileKind) error {
	for _, w := range want {
		if got == w {
			return nil
		}
	}
	if got == kindUnknown {
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
func article(k fileKind) string {
	if s := string(k); s != "" && strings.ContainsRune("aeiouAEIOUH", rune(s[0])) {
		return "an " + s
	}
	return "a " + string(k)
}

// sniffReader wraps rd so its first bytes can be classified without
// consuming them, and returns the kind.
func sniffReader(rd io.Reader) (*bufio.Reader, fileKind) {
	br, ok := rd.(*bufio.Reader)
	if !ok || br.Size() < sniffLimit {
		br = bufio.NewReaderSize(rd, sniffLimit)
	}
	head, err := br.Peek(sniffLimit)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) && len(head) == 0 {
		return br, kindUnknown
	}
	return br, sniffKind(head)
}
