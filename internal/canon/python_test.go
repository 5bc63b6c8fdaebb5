package canon

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

// TestPythonDifferential compares Marshal with CPython's
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) on
// 500 random documents of what seals and event payloads hold: strings with
// every escaping edge (controls, quotes, backslashes, <>&, DEL, U+2028,
// U+2029, non-ASCII, astral characters), integers below 2^53, booleans,
// null, arrays and objects with keys in the Basic Multilingual Plane (astral
// keys sort differently by design; see docs/formats/canonical-json.md). It
// needs python3 and skips without it.
func TestPythonDifferential(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	rng := rand.New(rand.NewSource(8785))
	var docs []any
	for i := 0; i < 500; i++ {
		docs = append(docs, randValue(rng, 0))
	}
	var in bytes.Buffer
	for _, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	script := `import sys, json
for line in sys.stdin.buffer.read().decode("utf-8").split("\n"):
    if line:
        sys.stdout.buffer.write(json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("python3 returned %d lines for %d documents", len(lines), len(docs))
	}
	for i, d := range docs {
		got, err := Marshal(d)
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		if string(got) != lines[i] {
			t.Errorf("doc %d differs:\n go     %q\n python %q", i, got, lines[i])
		}
	}
}

var pyChars = []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '<', '>', '&', '\'', 0x00, 0x01, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x7f, 0x80, 0xe9, 0x2028, 0x2029, 0x20ac, 0xfeff, 0xfffd, 0x1f600, 0x10ffff}

func randString(rng *rand.Rand, bmpOnly bool) string {
	n := rng.Intn(8)
	var b strings.Builder
	for i := 0; i < n; i++ {
		r := pyChars[rng.Intn(len(pyChars))]
		if bmpOnly && r > 0xffff {
			r = 'x'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randValue(rng *rand.Rand, depth int) any {
	k := rng.Intn(7)
	if depth > 3 {
		k = rng.Intn(4)
	}
	switch k {
	case 0:
		return randString(rng, false)
	case 1:
		return rng.Int63n(1<<53) - 1<<52
	case 2:
		return rng.Intn(2) == 0
	case 3:
		return nil
	case 4:
		n := rng.Intn(4)
		a := make([]any, n)
		for i := range a {
			a[i] = randValue(rng, depth+1)
		}
		return a
	default:
		n := rng.Intn(5)
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m[randString(rng, true)] = randValue(rng, depth+1)
		}
		return m
	}
}
