package jsonlimit

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	ok := [][]byte{
		[]byte(`{}`),
		[]byte(`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`),
		append(bytes.Repeat([]byte("["), MaxDepth), bytes.Repeat([]byte("]"), MaxDepth)...),
		[]byte(`"\"[[["`),
	}
	for _, d := range ok {
		if err := Check(d); err != nil {
			t.Errorf("Check(%.40q) = %v, want nil", d, err)
		}
	}
	deep := append([]byte("{\"a\":\n"), bytes.Repeat([]byte("["), MaxDepth)...)
	err := Check(deep)
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("Check(deep) = %v, want *Error", err)
	}
	if le.Line != 2 || le.Col != MaxDepth {
		t.Errorf("position = %d:%d, want 2:%d", le.Line, le.Col, MaxDepth)
	}
}

func TestCheckerPieces(t *testing.T) {
	doc := append(bytes.Repeat([]byte("[\"\\\"\""), MaxDepth), '[')
	var c Checker
	var err error
	for i := 0; i < len(doc) && err == nil; i++ {
		err = c.Write(doc[i : i+1])
	}
	if err == nil {
		t.Fatal("split document over the limit was accepted")
	}
}

// TestMillionLevelsIsLinear refuses a 2 MB document nested a million levels
// deep. It asserts the result, not the time; the time is logged.
func TestMillionLevelsIsLinear(t *testing.T) {
	doc := append(bytes.Repeat([]byte("["), 1_000_000), bytes.Repeat([]byte("]"), 1_000_000)...)
	start := time.Now()
	if Check(doc) == nil {
		t.Fatal("a million levels were accepted")
	}
	t.Logf("refused %d bytes in %v", len(doc), time.Since(start))
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"]"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := Check(data)
		var c Checker
		var split error
		for i := 0; i < len(data) && split == nil; i += 3 {
			split = c.Write(data[i:min(i+3, len(data))])
		}
		if (whole == nil) != (split == nil) {
			t.Fatalf("whole %v, split %v", whole, split)
		}
	})
}

func TestCheckIn(t *testing.T) {
	deep := append([]byte("\n"), bytes.Repeat([]byte("{\"a\":"), MaxDepth+1)...)
	err := CheckIn(deep, "events.jsonl", 7)
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("CheckIn = %v, want *Error", err)
	}
	if le.File != "events.jsonl" || le.Line != 8 || le.Col != 5*MaxDepth+1 {
		t.Errorf("position = %s:%d:%d, want events.jsonl:8:%d", le.File, le.Line, le.Col, 5*MaxDepth+1)
	}
	if want := "events.jsonl:8:1281: nesting deeper than 256 levels"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if CheckIn([]byte(`[[1]]`), "f", 1) != nil {
		t.Error("shallow document refused")
	}
}
