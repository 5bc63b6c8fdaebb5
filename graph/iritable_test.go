package graph

import (
	"strings"
	"testing"
)

// TestIRIExcludedBytes holds the table checkIRI looks bytes up in to the
// rule it stands for.
func TestIRIExcludedBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c <= 0x20 || c == 0x7f || strings.IndexByte("<>\"{}|^`\\", byte(c)) >= 0
		if iriExcludedBytes[c] != want {
			t.Errorf("byte %#x: excluded %v, want %v", c, iriExcludedBytes[c], want)
		}
		if err := checkIRI("urn:x" + string(rune(c))); (err != nil) != want {
			t.Errorf("byte %#x: checkIRI = %v", c, err)
		}
	}
}
