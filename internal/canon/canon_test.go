package canon

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// RFC 8785 §3.2.2, the main example: input and its canonical form.
func TestRFC8785MainExample(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Transform([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("RFC 8785 example (-want +got):\n%s", diff)
	}
}

// RFC 8785 §3.2.3: properties sorted by UTF-16 code units.
func TestRFC8785SortingExample(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	got, err := Transform([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("RFC 8785 sorting (-want +got):\n%s", diff)
	}
}

// RFC 8785 Appendix B: IEEE 754 doubles (hex) and their canonical text.
func TestRFC8785Numbers(t *testing.T) {
	tests := []struct {
		bits string
		want string // "" = must be refused (NaN, Infinity)
	}{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"}, // minus zero
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"7fffffffffffffff", ""}, // NaN
		{"7ff0000000000000", ""}, // Infinity
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, tt := range tests {
		t.Run(tt.bits, func(t *testing.T) {
			b, _ := hex.DecodeString(tt.bits)
			f := math.Float64frombits(binary.BigEndian.Uint64(b))
			if tt.want == "" {
				if !math.IsNaN(f) && !math.IsInf(f, 0) {
					t.Fatalf("vector %s is not NaN/Inf", tt.bits)
				}
				if got := FormatFloat(f); got != "null" {
					t.Errorf("FormatFloat(%v) = %q; NaN/Inf have no JSON form", f, got)
				}
				return
			}
			if got := FormatFloat(f); got != tt.want {
				t.Errorf("FormatFloat(%s) = %q, want %q", tt.bits, got, tt.want)
			}
			// The same value written as a JSON literal canonicalizes the same.
			lit := strings.Replace(tt.want, "e+", "e", 1)
			got, err := Transform([]byte(lit))
			if err != nil {
				t.Fatalf("Transform(%s): %v", lit, err)
			}
			if string(got) != tt.want {
				t.Errorf("Transform(%s) = %s, want %s", lit, got, tt.want)
			}
		})
	}
}

func TestNumberLiterals(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.0", "1"}, // JCS; Python writes 1.0 (documented divergence)
		{"1e16", "10000000000000000"},
		{"1.5e-07", "1.5e-7"}, // Python: 1.5e-07
		{"-0", "0"},
		{"-0.0", "0"},
		{"42", "42"},
		{"-9007199254740991", "-9007199254740991"},
		{"9007199254740993", "9007199254740992"},         // above 2^53: rounded to a double, as JCS says
		{"12345678901234567890", "12345678901234567000"}, // Python keeps big ints exact (divergence)
		{"100", "100"},
		{"1E2", "100"},
		{"0.1", "0.1"},
		{"1e21", "1e+21"},
		{"1e-7", "1e-7"},
	}
	for _, tt := range tests {
		got, err := Transform([]byte(tt.in))
		if err != nil {
			t.Errorf("Transform(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Transform(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"1e400", "-1e400"} {
		if _, err := Transform([]byte(bad)); err == nil {
			t.Errorf("Transform(%s) succeeded; a number beyond float64 must be refused", bad)
		}
	}
}

// Python json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
// output, produced with CPython 3.11 (spec Appendix A).
func TestPythonCompatStrings(t *testing.T) {
	tests := []struct {
		name string
		in   string // a Go string value
		want string // Python's bytes
	}{
		{"html, line separators, DEL, short escapes", "\x7f\u2028\u2029<>&\x1f\b\f\n\r\t/\"\\\\", "\"\x7f\u2028\u2029<>&\\u001f\\b\\f\\n\\r\\t/\\\"\\\\\\\\\""},
		{"raw non-ASCII", "é€😀", "\"é€😀\""},
		{"other controls lowercase hex", "\x00\x01\x0b", "\"\\u0000\\u0001\\u000b\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-python +go):\n%s", diff)
			}
		})
	}
}

func TestPythonCompatObjects(t *testing.T) {
	in := map[string]any{"b": 1, "a": []any{1, -2, 0}, "é": map[string]any{"z": nil, "y": true, "x": false}, "A": ""}
	want := `{"A":"","a":[1,-2,0],"b":1,"é":{"x":false,"y":true,"z":null}}`
	got, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-python +go):\n%s", diff)
	}
}

// Keys above U+FFFF: JCS sorts by UTF-16 units, Python by code points.
// Documented divergence; no witness-signed body has such keys.
func TestAstralKeyOrderFollowsJCS(t *testing.T) {
	got, err := Transform([]byte(`{"\ue000":1,"\ud83d\ude00":2}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"😀\":2,\"\ue000\":1}" // Python: {"\ue000":1,"😀":2}
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Spec Appendix B.1: the fixture seal body and its HMAC with 32 zero bytes.
func TestSealBodyVectorB1(t *testing.T) {
	body := map[string]any{
		"witness_id":           "witness-fixture-1",
		"tools":                []any{map[string]any{"scopes": []string{"read:/data/**"}, "name": "read_file"}, map[string]any{"name": "list_dir", "scopes": []string{"read:/data/**"}}},
		"system_prompt_sha256": "5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b",
		"created_at":           "2026-08-30T14:33:00+00:00",
	}
	want := `{"created_at":"2026-08-30T14:33:00+00:00","system_prompt_sha256":"5fe1e632697818fba2b8c651b8a000607cdf4b1b35bceae914d5a855b3ad5a2b","tools":[{"name":"read_file","scopes":["read:/data/**"]},{"name":"list_dir","scopes":["read:/data/**"]}],"witness_id":"witness-fixture-1"}`
	got, err := Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("body (-want +got):\n%s", diff)
	}
	m := hmac.New(sha256.New, make([]byte, 32))
	m.Write(got)
	if h := hex.EncodeToString(m.Sum(nil)); h != "dc91ea105843ada26bedb76388116820c12ff4e81f276328ab20a691a182996a" {
		t.Errorf("HMAC = %s", h)
	}
}

// Spec Appendix B.3 (derived): the README quickstart seal.
func TestSealVectorsB3(t *testing.T) {
	prompt := sha256.Sum256([]byte("Solo lee archivos en /data"))
	ph := hex.EncodeToString(prompt[:])
	if ph != "4a24d9d18158a76061bd19731f365b900e4f014d41f21f2799c9d97b4af2cc80" {
		t.Fatalf("prompt hash %s", ph)
	}
	tools := []any{map[string]any{"name": "read_file", "scopes": []string{"read:/data/**"}}, map[string]any{"name": "list_dir", "scopes": []string{"read:/data/**"}}}
	body := map[string]any{"created_at": "2026-08-30T14:33:00+00:00", "system_prompt_sha256": ph, "tools": tools, "witness_id": "witness-cli-1"}
	b, err := Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, make([]byte, 32))
	m.Write(b)
	sig := "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	if sig != "hmac-sha256:7aa374460c0ff2773f5cb88dee94f4c361ba97cee099f5a7b7d1053d1c32abd6" {
		t.Errorf("signature %s", sig)
	}
	body["signature"] = sig
	r, err := Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(r)
	if ref := hex.EncodeToString(sum[:]); ref != "571974d614f68231e84416afb3f29764e3e87446d87ec79e35a7d2340c4f05db" {
		t.Errorf("seal_ref %s", ref)
	}
}

func TestTransformRefuses(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"duplicate key", `{"a":1,"a":2}`},
		{"trailing data", `{} {}`},
		{"invalid UTF-8", "\"\xff\""},
		{"lone high surrogate", `"\ud800"`},
		{"lone low surrogate", `"\udc00x"`},
		{"high surrogate then non-surrogate", `"\ud800\u0041"`},
		{"lone surrogate in a key", `{"\udfff":1}`},
		{"truncated", `{"a":`},
		{"NaN literal", `NaN`},
		{"empty", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if out, err := Transform([]byte(tt.in)); err == nil {
				t.Errorf("Transform(%q) = %q, want an error", tt.in, out)
			}
		})
	}
}

func TestTransformIdempotent(t *testing.T) {
	in := `{"z":[1,2,{"b":"\u2028","a":0.5}],"a":"x\u0000y","m":{"\ud83d\ude00":true}}`
	once, err := Transform([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Transform(once)
	if err != nil {
		t.Fatal(err)
	}
	if string(once) != string(twice) {
		t.Errorf("not idempotent:\n%s\n%s", once, twice)
	}
}

func TestIndentMatchesPython(t *testing.T) {
	c, err := Marshal(map[string]any{"keys": []any{map[string]any{"b": []any{}, "a": map[string]any{}, "c": []string{"x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Indent(c)
	if err != nil {
		t.Fatal(err)
	}
	// python3 -c 'import json;print(json.dumps({"keys":[{"b":[],"a":{},"c":["x"]}]},indent=2,sort_keys=True),end="")'
	want := "{\n  \"keys\": [\n    {\n      \"a\": {},\n      \"b\": [],\n      \"c\": [\n        \"x\"\n      ]\n    }\n  ]\n}"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-python +go):\n%s", diff)
	}
}

func TestASCII(t *testing.T) {
	got := ASCII([]byte("{\"k\":\"é€😀\u2028\"}"))
	// python3: json.dumps({"k":"é€😀\u2028"}, separators=(",",":"))
	want := `{"k":"\u00e9\u20ac\ud83d\ude00\u2028"}`
	if string(got) != want {
		t.Errorf("ASCII = %s, want %s", got, want)
	}
}

func TestDeterministic(t *testing.T) {
	v := map[string]any{"b": []any{3, 2, 1}, "a": map[string]any{"y": "é", "x": 1.5}}
	first, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		got, _ := Marshal(v)
		if string(got) != string(first) {
			t.Fatalf("run %d differs: %s vs %s", i, got, first)
		}
	}
}
