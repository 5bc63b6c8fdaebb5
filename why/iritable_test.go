package why

import (
	"fmt"
	"strings"
	"testing"
)

// TestIRITable: numbers are dense and stable across growth, lookups find
// exactly the interned strings, long strings get their own chunk.
func TestIRITable(t *testing.T) {
	tab := newIRITable()
	var all []string
	for i := 0; i < 5000; i++ {
		all = append(all, fmt.Sprintf("urn:witness:s/call/e%d", i))
	}
	all = append(all, strings.Repeat("x", iriChunk+3), "", "urn:witness:s/call/e1 ")
	for i, s := range all {
		if k := tab.Intern(s); int(k) != i {
			t.Fatalf("%d: number %d", i, k)
		}
	}
	for i, s := range all {
		if k := tab.Intern(s); int(k) != i {
			t.Fatalf("again %d: number %d", i, k)
		}
		if k, ok := tab.Lookup(s); !ok || int(k) != i || string(tab.bytes(k)) != s {
			t.Fatalf("lookup %d: %d %v", i, k, ok)
		}
	}
	if _, ok := tab.Lookup("urn:witness:s/call/e5000"); ok || tab.Len() != len(all) {
		t.Fatalf("len %d", tab.Len())
	}
}
