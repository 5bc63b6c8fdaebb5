package graph

import (
	"bytes"
	"testing"
)

// checkCompact: a compact line decodes to the N-Quads line it stands for,
// and two compact lines compare as their N-Quads lines do.
func checkCompact(t *testing.T, p1 string, o1 Term, p2 string, o2 Term) {
	t.Helper()
	checkCompactPre(t, nil, p1, o1, p2, o2)
	checkCompactPre(t, []byte("<urn:witness:s/"), p1, o1, p2, o2)
}

// checkCompactPre: as checkCompact, the lines coded against the session
// prefix pre (nil: none), read directly and after appendExpanded.
func checkCompactPre(t *testing.T, pre []byte, p1 string, o1 Term, p2 string, o2 Term) {
	t.Helper()
	key := []byte("<urn:x:s>")
	c1, c2 := appendLinePre(nil, pre, p1, o1), appendLinePre(nil, pre, p2, o2)
	for _, c := range []struct {
		p string
		o Term
		l []byte
	}{{p1, o1, c1}, {p2, o2, c2}} {
		got, err := appendNQuadsLine(nil, pre, key, c.l)
		want := appendQuad(nil, "urn:x:s", c.p, c.o)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("compact %q: got %q, %v; want %q", c.l, got, err, want)
		}
		x, err := appendExpanded(nil, pre, c.l)
		if err != nil {
			t.Fatalf("expand %q: %v", c.l, err)
		}
		p, obj, dt, err := splitLine(x)
		if err != nil {
			t.Fatalf("split %q (expanded %q): %v", x, c.l, err)
		}
		got = append(append(append([]byte("<urn:x:s> <"), p...), "> "...), obj...)
		if dt != nil {
			got = append(append(append(got, "^^<"...), dt...), '>')
		}
		if got = append(got, " .\n"...); !bytes.Equal(got, want) {
			t.Fatalf("expanded %q: got %q; want %q", x, got, want)
		}
		if bytes.Count(c.l, []byte("\n")) != 1 {
			t.Fatalf("compact %q: not one line", c.l)
		}
	}
	n1, n2 := appendQuad(nil, "urn:x:s", p1, o1), appendQuad(nil, "urn:x:s", p2, o2)
	if got, want := bytes.Compare(c1, c2), bytes.Compare(n1, n2); got != want {
		t.Fatalf("order of %q, %q: %d; of %q, %q: %d", c1, c2, got, n1, n2, want)
	}
}

func TestCompactLines(t *testing.T) {
	preds := []string{RDFType, ProvUsed, ProvValue, WEventID, OtelToolName, "urn:p", "http://www.w3.org/ns/prov#usedX", "http://www.w3.org/ns/prov#use", "https://z"}
	objs := []Term{Ref(ProvEntity), Ref(WToolCall), Ref(WModelToolCall), Ref("http://www.w3.org/ns/prov#Entit"), Ref("http://www.w3.org/ns/prov#EntityX"), Ref("http://www.w3.org/ns/prov#Entity/"), Ref("http://a"), Ref("zz:c"), Ref("urn:witness:s"), Ref("urn:witness:s/"), Ref("urn:witness:s0"), Ref("urn:witness:s."), Ref("urn:witness:r/x"), Ref("urn:witness:t"), Ref("urn:witness:seal:sha256:00"), Ref("urn:witness:"), Ref("urn:witness:s/x>"[:15]), Ref("urn:witness:s/call/e1"), Ref("urn:witness:s/call/e10"), Str(""), Str("a\"b\\c\n"), Str("é"),
		Lit("2026-08-30T14:33:00Z", xsdDateTime), Lit("1", XSDInteger), Lit("true", xsdBoolean), Lit("x", "urn:dt"), Lit("x", "http://www.w3.org/2001/XMLSchema#a"), Lit("x", "zz:dt"), Lit("x", xsdString)}
	for _, p1 := range preds {
		for _, p2 := range preds {
			for _, o1 := range objs {
				for _, o2 := range objs {
					checkCompact(t, p1, o1, p2, o2)
				}
			}
		}
	}
	if _, _, _, err := splitLine([]byte("\x01x\n")); err == nil {
		t.Fatal("a corrupt line was read")
	}
}

func FuzzCompactLine(f *testing.F) {
	f.Add(ProvUsed, "urn:a", "", "", WEventID, "", "e1", "")
	f.Add("urn:p", "", "x\"y", xsdDateTime, "urn:q", "", "x", "urn:dt")
	f.Add(RDFType, ProvEntity, "", "", RDFType, ProvEntity+"x", "", "")
	f.Add(RDFType, "", "x", "", RDFType, "urn:c", "", "")
	f.Add(ProvUsed, "urn:witness:s/e1", "", "", ProvUsed, "urn:witness:s.", "", "")
	f.Add(ProvUsed, "urn:witness:s", "", "", ProvUsed, "urn:witness:seal:1", "", "")
	f.Fuzz(func(t *testing.T, p1, iri1, lex1, dt1, p2, iri2, lex2, dt2 string) {
		term := func(iri, lex, dt string) Term {
			if iri != "" {
				return Ref(iri)
			}
			return Lit(lex, dt)
		}
		// IRIs as the mapper mints them: no '>', '\n' or control bytes
		for _, s := range []string{p1, iri1, dt1, p2, iri2, dt2} {
			for i := 0; i < len(s); i++ {
				if s[i] <= ' ' || s[i] == '>' || s[i] == '<' || s[i] == '"' || s[i] >= 0x7f {
					return
				}
			}
		}
		if p1 == "" || p2 == "" {
			return
		}
		checkCompact(t, p1, term(iri1, lex1, dt1), p2, term(iri2, lex2, dt2))
		// and the raw bytes of any line are refused or read, never a panic
		splitLine([]byte(lex1))
		appendExpanded(nil, []byte("<urn:witness:s/"), []byte(lex1))
		appendNQuadsLine(nil, []byte("<urn:witness:s/"), []byte("\x01x>"), []byte(lex1))
	})
}
