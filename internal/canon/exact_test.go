package canon

import "testing"

func TestExactNumber(t *testing.T) {
	cases := []struct {
		lit, canon string
		exact      bool
	}{
		{"1.0", "1", true}, {"-0", "0", true}, {"2.50", "2.5", true}, {"1E2", "100", true},
		{"12345678901234567891", "", false}, {"1e400", "", false}, {"0.10000000000000000001", "", false},
	}
	for _, c := range cases {
		got, exact := ExactNumber(c.lit)
		if exact != c.exact || (c.exact && got != c.canon) {
			t.Errorf("ExactNumber(%s) = %q, %v; want %q, %v", c.lit, got, exact, c.canon, c.exact)
		}
	}
}
