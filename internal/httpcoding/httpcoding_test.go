package httpcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"testing"
)

func gz(b []byte) []byte {
	var o bytes.Buffer
	w := gzip.NewWriter(&o)
	w.Write(b)
	w.Close()
	return o.Bytes()
}

func TestDecode(t *testing.T) {
	body := []byte(`{"a":1}`)
	var zl, raw bytes.Buffer
	w := zlib.NewWriter(&zl)
	w.Write(body)
	w.Close()
	fw, _ := flate.NewWriter(&raw, 5)
	fw.Write(body)
	fw.Close()
	g := gz(body)
	cases := []struct {
		name, header string
		in           []byte
		want         string
		doubt, cut   bool
	}{
		{"none", "", body, `{"a":1}`, false, false},
		{"identity", "identity", body, `{"a":1}`, false, false},
		{"unknown", "snappy", body, `{"a":1}`, true, false},
		{"unknown beside gzip", "gzip, snappy", g, string(g), true, false},
		{"gzip", "gzip", g, `{"a":1}`, false, false},
		{"upper", " GZIP ", g, `{"a":1}`, false, false},
		{"x-gzip", "x-gzip", g, `{"a":1}`, false, false},
		{"stacked", "gzip, gzip", gz(g), `{"a":1}`, false, false},
		{"two members", "gzip", append(append([]byte(nil), g...), gz([]byte("b"))...), `{"a":1}b`, false, false},
		{"deflate zlib", "deflate", zl.Bytes(), `{"a":1}`, false, false},
		{"deflate raw", "deflate", raw.Bytes(), `{"a":1}`, false, false},
		{"cut trailer", "gzip", g[:len(g)-8], `{"a":1}`, true, true},
		{"not compressed", "gzip", body, "", true, false},
		{"trailing garbage", "gzip", append(append([]byte(nil), g...), "xx"...), "", true, false},
		{"br", "br", body, "", true, false},
	}
	for _, c := range cases {
		r, err := Decode(c.in, c.header, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(r.Body) != c.want || (r.Doubt != "") != c.doubt || r.Cut != c.cut {
			t.Errorf("%s: body %q doubt %q cut %v; want %q doubt=%v cut=%v", c.name, r.Body, r.Doubt, r.Cut, c.want, c.doubt, c.cut)
		}
	}
}

func TestDecodeBomb(t *testing.T) {
	big := gz(make([]byte, 1<<20))
	if _, err := Decode(big, "gzip", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(gz([]byte("hello")), "gzip")
	f.Add([]byte("x"), "deflate")
	f.Add(gz(gz([]byte("a"))), "gzip, x-gzip")
	f.Fuzz(func(t *testing.T, b []byte, h string) {
		r, err := Decode(b, h, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatal(err)
			}
			return
		}
		if len(r.Body) > 1<<16 && len(Codings(h)) > 0 && r.Doubt == "" && r.Codings != nil {
			t.Fatalf("decoded %d bytes over the limit", len(r.Body))
		}
	})
}
