package graph

import (
	"bytes"
	"errors"
	"slices"
)

// The external sort of StreamNQuads and StreamJSONLD keeps the quad lines
// of a subject in a compact, private form (docs/design/scale-history.md, writing):
//
//	PRED OBJECT '\n'
//
// PRED is one byte naming a known predicate (streamPreds) or, for any
// other predicate, one byte followed by the predicate IRI and '>'. OBJECT
// is the N-Quads object without the " ." that ends every line, with a
// literal's "^^<datatype>" replaced by one byte (streamTypes) or one byte
// followed by "datatype>", an rdf:type's class coded (appendIRIObject)
// and any other IRI coded against the session prefix (appendSessObject). The codes are ranks, so comparing two compact
// lines byte by byte gives the order of the N-Quads lines they stand for
// (RDFC-1.0's code point order): a known IRI i gets the even rank 2i+2, an
// unknown one the odd rank 2j+1, j the number of known IRIs below it
// (compared, as in the line, with the '>' that closes them). A plain
// literal ends in '"' and '\n' (" ." sorts before "^^"); datatype codes are
// 0x80 and above, never '"', '>' or '\n'. Lines never hold a raw '\n'
// (literals escape it, IRIs have none), so blocks stay '\n'-separated.

// streamPreds are the predicates a compact line names in one byte.
var streamPreds = sortedTable(RDFType,
	ProvUsed, ProvWasGeneratedBy, provWasAssociatedWith, ProvWasInformedBy, ProvWasDerivedFrom,
	ProvWasInfluencedBy, provWasAttributedTo, provQualifiedAssociation, provAgentProp, provHadPlan,
	provStartedAtTime, provEndedAtTime, ProvGeneratedAtTime, ProvValue,
	WEventID, WSeq, WSource, WSession, wPayloadSHA256, WRole, wIsError, wrpcError, WRPCIDJSON,
	WEffectOp, WEffectTarget, wEffectReason, WDefinitionSHA256, WAnnotations, wToolsSHA256,
	wServerName, wServerVersion, wServerCommand, wServerArgv, wWitnessVersion, WSealDigest,
	WWitnessID, WBoundSeal, WImportedFrom, wPairing, wNote, wRedactionRule, wEventCount,
	wChainHead, wEndReason, wSignatureKeyID, WUnresolvedLink, wRedacted, wLegacyFormat,
	wLegacyLine, WLegacySealRef, wLegacyUnsealed, wLegacyOrphan, WDirection, WConversation,
	WSender, WRecipient, WText, WOperation, WAuthorAgentID, WPostID, WDuringCandidate,
	WPossiblyInfluencedBy, wElicitationAction,
	otelOperationName, OtelToolName, OtelMCPMethodName, otelMCPProtocolVer, otelJSONRPCRequestID,
	otelErrorType, otelRPCStatusCode, OtelMCPResourceURI, otelPromptName, otelResponseModel,
	WJoin, WJoinCandidate, wModelCallID, WModelStatus, WLogName, WLogSHA256)

// streamTypes are the literal datatypes a compact line names in one byte.
var streamTypes = sortedTable(xsdDateTime, XSDInteger, xsdBoolean)

// streamClasses are the classes the object of an rdf:type line names in
// one byte.
var streamClasses = sortedTable(ProvEntity, ProvActivity, ProvAgent, ProvSoftwareAgent, ProvPlan,
	ProvAssociation, provPerson,
	WCaptureSession, WToolCall, WModelTurn, waiAgent, wmcpServer, wWitness, WSeal, WToolDefinition,
	WArguments, WResult, WModelMessage, WExternalEffect, WNotification, WAgentMessage, WAmbiguousLine,
	WMCPRequest, wResourceRead, wPromptGet, wElicitation, WRequestParams, WMCPAnswer,
	wResourceContents, wPromptMessages, WUserInput, wUser, wSamplingTurn, WModelToolCall)

const (
	predBase  = 0x10 // PRED byte = predBase + rank
	typeBase  = 0x80 // datatype byte = typeBase + rank
	classBase = '"'  // an rdf:type line's IRI object: byte classBase + rank, above a literal's '"'
)

// rdfTypeCode is the PRED byte of rdf:type.
var rdfTypeCode = func() byte {
	r, _ := streamPreds.rank(RDFType)
	return predBase + r
}()

// codeTable maps IRIs to ranks.
type codeTable struct {
	iris []string // sorted as "iri>"
	raw  [][]byte // iris as bytes
	brk  [][]byte // iris as "<iri>"
	// slots is an open-addressing table of the known IRIs, indexed by
	// slotHash: a known IRI is found with a hash of its length and three
	// of its bytes and one string comparison (pointer-equal for the
	// mapper's constants), about a third of a map lookup's cost on the
	// mapper's path (docs/design/scale-history.md, the mapper).
	slots [codeSlots]codeSlot
}

// codeSlots is the size of codeTable.slots: a power of two, well above
// the number of known IRIs so that a lookup almost always probes once.
const codeSlots = 512

type codeSlot struct {
	iri  string
	code byte
}

// slotHash is the first slot to probe for s: a multiplicative hash of
// its length and its last eight bytes (fewer if shorter), where the
// known IRIs differ (they share their namespace prefixes).
func slotHash[S string | []byte](s S) uint32 {
	n := len(s)
	x := uint64(n)
	if n >= 8 {
		t := s[n-8:]
		x ^= uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
	} else {
		for i := 0; i < n; i++ {
			x ^= uint64(s[i]) << (8 * i)
		}
	}
	x *= 0x9E3779B97F4A7C15
	x ^= x >> 29
	x *= 0xBF58476D1CE4E5B9
	return uint32(x >> (64 - 9)) // codeSlots = 1<<9
}

func sortedTable(iris ...string) *codeTable {
	slices.SortFunc(iris, func(a, b string) int { return bytes.Compare([]byte(a+">"), []byte(b+">")) })
	iris = slices.Compact(iris)
	if len(iris) >= codeSlots/2 {
		panic("graph: code table too large") // a programming error, at init
	}
	t := &codeTable{iris: iris}
	for i, s := range iris {
		h := slotHash(s)
		for t.slots[h].iri != "" {
			h = (h + 1) % codeSlots
		}
		t.slots[h] = codeSlot{iri: s, code: byte(2*i + 2)}
		t.raw = append(t.raw, []byte(s))
		t.brk = append(t.brk, []byte("<"+s+">"))
	}
	return t
}

// rank returns the rank of iri and whether it is known.
func (t *codeTable) rank(iri string) (byte, bool) {
	if c, ok := t.known(iri); ok {
		return c, true
	}
	j, _ := slices.BinarySearchFunc(t.iris, iri, func(k, x string) int { return compareKey(k, x) })
	return byte(2*j + 1), false
}

// known returns the rank of iri if it is known.
func known[S string | []byte](t *codeTable, iri S) (byte, bool) {
	if len(iri) > 0 {
		for h := slotHash(iri); t.slots[h].iri != ""; h = (h + 1) % codeSlots {
			if t.slots[h].iri == string(iri) {
				return t.slots[h].code, true
			}
		}
	}
	return 0, false
}

func (t *codeTable) known(iri string) (byte, bool) { return known(t, iri) }

// appendCoded appends the code of iri (base + rank), then for an unknown
// IRI the IRI and '>'.
func (t *codeTable) appendCoded(b []byte, base byte, iri string) []byte {
	r, known := t.rank(iri)
	b = append(b, base+r)
	if !known {
		b = append(b, iri...)
		b = append(b, '>')
	}
	return b
}

// appendIRIObject appends the IRI object of a compact line whose PRED
// byte is code, '\n' included: "<iri>", or for rdf:type the class's code
// (classBase + rank), followed for an unknown class by "<iri>". Within
// rdf:type the codes order the lines as their IRIs do (codeTable's
// ranks; an unknown class's IRI, after its code, compares as in the
// N-Quads line); literals ('"') stay below every code.
func appendIRIObject[S string | []byte](b []byte, code byte, iri S) []byte {
	if code == rdfTypeCode {
		if r, ok := known(streamClasses, iri); ok {
			return append(b, classBase+r, '\n')
		}
		r, _ := streamClasses.rank(string(iri))
		b = append(b, classBase+r)
	}
	b = append(b, '<')
	b = append(b, iri...)
	return append(b, '>', '\n')
}

// The IRI object of a line other than rdf:type, in a stream whose
// session prefix P ("urn:witness:<session>/", streamBlocks) is known,
// begins with one of three bytes that keep the N-Quads order: '<' for an
// IRI below P ("<iri>", as without P), objSess for an IRI that begins
// with P (then the rest of the IRI and '>'), objAbove for an IRI above P
// that does not begin with it (then "<iri>"). The IRIs that begin with P
// sort together, between the other two (docs/design/scale.md).
const (
	objSess  = '='
	objAbove = '?'
)

// appendLine appends the compact line of (p, o), '\n' included, without
// a session prefix.
func appendLine(b []byte, p string, o Term) []byte { return appendLinePre(b, nil, p, o) }

// appendLinePre appends the compact line of (p, o), '\n' included; pre,
// if not nil, is "<" + P: IRI objects are coded against P.
func appendLinePre(b, pre []byte, p string, o Term) []byte {
	n := len(b)
	b = streamPreds.appendCoded(b, predBase, p)
	if o.IRI != "" {
		if b[n] != rdfTypeCode && len(pre) > 1 {
			return appendSessObject(b, pre[1:], o.IRI)
		}
		return appendIRIObject(b, b[n], o.IRI)
	}
	b = append(b, '"')
	b = AppendEscaped(b, o.Lex)
	b = append(b, '"')
	if dt := o.datatype(); dt != xsdString {
		b = streamTypes.appendCoded(b, typeBase, dt)
	}
	return append(b, '\n')
}

// appendSessObject appends the IRI object iri coded against the session
// prefix sp (P), '\n' included.
func appendSessObject(b, sp []byte, iri string) []byte {
	if len(iri) >= len(sp) && iri[:len(sp)] == string(sp) {
		b = append(b, objSess)
		b = append(b, iri[len(sp):]...)
		return append(b, '>', '\n')
	}
	if iriAbove(iri, sp) {
		b = append(b, objAbove)
	}
	b = append(b, '<')
	b = append(b, iri...)
	return append(b, '>', '\n')
}

// iriAbove reports whether "iri>" sorts after sp, which it does not
// begin with (sp holds no '>').
func iriAbove(iri string, sp []byte) bool {
	n := min(len(iri), len(sp))
	for i := 0; i < n; i++ {
		if iri[i] != sp[i] {
			return iri[i] > sp[i]
		}
	}
	// iri is a prefix of sp: its '>' against sp's next byte
	return len(iri) < len(sp) && '>' > sp[len(iri)]
}

var errCompact = errors.New("graph: corrupt compact quad line")

// errSess: splitLine's object is coded against the session prefix
// (objSess): obj is the rest of the IRI and '>' (appendExpanded writes
// such lines out).
var errSess = errors.New("graph: compact quad line coded against the session prefix")

// objectAt returns where the object of compact line l begins (after the
// PRED byte, and an unknown predicate's "iri>"), or -1.
func objectAt(l []byte) int {
	if len(l) == 0 {
		return -1
	}
	if r := l[0] - predBase; l[0] >= predBase && r%2 == 0 && r > 0 && int(r/2-1) < len(streamPreds.iris) {
		return 1
	}
	e := bytes.IndexByte(l[1:], '>')
	if e < 0 {
		return -1
	}
	return e + 2
}

// appendExpanded appends the lines of a block (without its key) with
// their session-coded objects written out ("<" + P + rest, P from pre)
// and objAbove dropped, so that splitLine reads them. pre nil: appended
// as they are.
func appendExpanded(b, pre, lines []byte) ([]byte, error) {
	if pre == nil {
		return append(b, lines...), nil
	}
	for len(lines) > 0 {
		e := bytes.IndexByte(lines, '\n') + 1
		if e == 0 {
			return b, errCompact
		}
		l := lines[:e]
		lines = lines[e:]
		if l[0] == rdfTypeCode {
			b = append(b, l...)
			continue
		}
		o := objectAt(l)
		if o < 0 || o >= len(l) {
			return b, errCompact
		}
		switch l[o] {
		case objSess:
			b = append(b, l[:o]...)
			b = append(b, pre...)
			b = append(b, l[o+1:]...)
		case objAbove:
			b = append(b, l[:o]...)
			b = append(b, l[o+1:]...)
		default:
			b = append(b, l...)
		}
	}
	return b, nil
}

// splitLine returns the predicate IRI, and the object of a compact line
// (without its '\n', an IRI as "<iri>") with its datatype: "" for
// xsd:string.
func splitLine(l []byte) (p, obj, dt []byte, err error) {
	if len(l) >= 3 && l[0] == rdfTypeCode && l[1] != '"' && l[len(l)-1] == '\n' {
		// a class: its code, alone if known, else followed by "<iri>"
		r, rest := l[1]-classBase, l[2:len(l)-1]
		pt := streamPreds.raw[(rdfTypeCode-predBase)/2-1]
		switch {
		case len(rest) == 0 && r%2 == 0 && r > 0 && int(r/2-1) < len(streamClasses.brk):
			return pt, streamClasses.brk[r/2-1], nil, nil
		case r%2 != 0 && len(rest) >= 2 && rest[0] == '<' && rest[len(rest)-1] == '>':
			return pt, rest, nil, nil
		}
		return nil, nil, nil, errCompact
	}
	if len(l) < 3 || l[len(l)-1] != '\n' || l[0] < predBase {
		return nil, nil, nil, errCompact
	}
	r := l[0] - predBase
	rest := l[1 : len(l)-1]
	if r%2 == 0 && r > 0 && int(r/2-1) < len(streamPreds.iris) {
		p = streamPreds.raw[r/2-1]
	} else {
		e := bytes.IndexByte(rest, '>')
		if e < 0 {
			return nil, nil, nil, errCompact
		}
		p, rest = rest[:e], rest[e+1:]
	}
	if len(rest) < 2 {
		return nil, nil, nil, errCompact
	}
	switch rest[0] {
	case '<':
		return p, rest, nil, nil
	case objAbove:
		if rest[1] != '<' || len(rest) < 3 {
			return nil, nil, nil, errCompact
		}
		return p, rest[1:], nil, nil
	case objSess:
		if rest[len(rest)-1] != '>' {
			return nil, nil, nil, errCompact
		}
		return p, rest[1:], nil, errSess
	}
	last := rest[len(rest)-1]
	switch {
	case last == '"':
		return p, rest, nil, nil
	case last >= typeBase:
		r := last - typeBase
		if r%2 != 0 || r == 0 || int(r/2-1) >= len(streamTypes.iris) {
			return nil, nil, nil, errCompact
		}
		return p, rest[:len(rest)-1], streamTypes.raw[r/2-1], nil
	case last == '>':
		q := closingQuote(rest)
		if q < 0 || q+2 >= len(rest) {
			return nil, nil, nil, errCompact
		}
		return p, rest[:q+1], rest[q+2 : len(rest)-1], nil
	}
	return nil, nil, nil, errCompact
}

// appendNQuadsLine appends the N-Quads line of subject key ("<s>", or
// keyMark standing for pre and the rest of "<s>") and the compact line l.
// A line that is not compact (never written by appendLine) is an error.
func appendNQuadsLine(b, pre, key, l []byte) ([]byte, error) {
	p, obj, dt, err := splitLine(l)
	if err == errSess && pre != nil {
		// an IRI object beginning with P: obj is the rest and '>'
		err = nil
		b = appendKey(b, pre, key)
		b = append(b, ' ', '<')
		b = append(b, p...)
		b = append(b, '>', ' ')
		b = append(b, pre...)
		b = append(b, obj...)
		return append(b, ' ', '.', '\n'), nil
	}
	if err != nil {
		return b, err
	}
	b = appendKey(b, pre, key)
	b = append(b, ' ', '<')
	b = append(b, p...)
	b = append(b, '>', ' ')
	b = append(b, obj...)
	if dt != nil {
		b = append(b, '^', '^', '<')
		b = append(b, dt...)
		b = append(b, '>')
	}
	return append(b, ' ', '.', '\n'), nil
}

// appendKey appends key, "<s>" or keyMark standing for pre.
func appendKey(b, pre, key []byte) []byte {
	if key[0] == keyMark && pre != nil {
		b = append(b, pre...)
		key = key[1:]
	}
	return append(b, key...)
}

// appendNQuadsBlock appends the N-Quads lines of a block (its "<subject>"
// key, then compact lines) and returns how many. pre: "<" + P, what a
// key beginning with keyMark and an objSess object stand for
// (streamBlocks), or nil.
func appendNQuadsBlock(b, pre, blk []byte) ([]byte, int64, error) {
	k := len(lineKey(blk))
	key, rest := blk[:k], blk[k:]
	var n int64
	for len(rest) > 0 {
		e := bytes.IndexByte(rest, '\n') + 1
		if e == 0 {
			return b, n, errCompact
		}
		var err error
		if b, err = appendNQuadsLine(b, pre, key, rest[:e]); err != nil {
			return b, n, err
		}
		rest = rest[e:]
		n++
	}
	return b, n, nil
}
