package graph

import (
	"math/rand"
	"testing"
)

// TestCanonicalDateTime: whatever the shortcut accepts, the long way gives
// back unchanged; and it does accept the times witness writes.
func TestCanonicalDateTime(t *testing.T) {
	for _, ts := range []string{"2026-08-30T14:33:00.132Z", "2026-08-30T14:33:00Z", "2024-02-29T23:59:59.123456789Z", "1000-01-01T00:00:00.5Z"} {
		if !canonicalDateTime(ts) {
			t.Errorf("%s: not taken as canonical", ts)
		}
	}
	for _, ts := range []string{"2026-08-30T14:33:00.130Z", "2026-08-30T14:33:00.Z", "2025-02-29T00:00:00Z", "2026-08-30T24:00:00Z",
		"2026-08-30T14:33:60Z", "2026-08-30T14:33:00+00:00", "0999-01-01T00:00:00Z", "2026-13-01T00:00:00Z", "2026-04-31T00:00:00Z",
		"2026-08-30t14:33:00Z", "2026-08-30T14:33:00.1234567890Z"} {
		if canonicalDateTime(ts) {
			t.Errorf("%s: taken as canonical", ts)
		}
	}
	r := rand.New(rand.NewSource(1))
	const alphabet = "0123456789-:.TZ+"
	base := []byte("2024-02-29T23:59:59.123456789Z")
	accepted := 0
	for i := 0; i < 200000; i++ {
		b := append([]byte(nil), base[:20+r.Intn(11)]...)
		for k := r.Intn(4); k > 0; k-- {
			b[r.Intn(len(b))] = alphabet[r.Intn(len(alphabet))]
		}
		checkDateTime(t, string(b))
		if canonicalDateTime(string(b)) {
			accepted++
		}
	}
	if accepted == 0 {
		t.Fatal("no random time taken as canonical")
	}
}

func checkDateTime(t *testing.T, ts string) {
	t.Helper()
	if !canonicalDateTime(ts) {
		return
	}
	if got, err := parseDateTime(ts); err != nil || got != ts {
		t.Fatalf("%q taken as canonical, but DateTime gives %q, %v", ts, got, err)
	}
}

func FuzzCanonicalDateTime(f *testing.F) {
	f.Add("2026-08-30T14:33:00.132Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Fuzz(checkDateTime)
}
