package canon

import (
	"strconv"
	"strings"
)

// ExactNumber returns the canonical JSON text of the number literal lit
// (FormatNumber) and whether it denotes exactly the value lit denotes
// (1.0 → 1 and -0 → 0 do; 12345678901234567891, 1e400 and
// 0.10000000000000000001 do not). The comparison is on decimal digits, in
// time linear in len(lit). It is the one exactness rule of every wire
// reader (MCP lines, model API bodies).
func ExactNumber(lit string) (string, bool) {
	c, err := FormatNumber(lit)
	if err != nil {
		return "", false
	}
	a, ok1 := decimalOf(lit)
	b, ok2 := decimalOf(c)
	return c, ok1 && ok2 && a == b
}

// decimalOf normalises a JSON number literal to sign, significant digits
// and exponent ("-123e-2"); zero, of either sign, is "0".
func decimalOf(lit string) (string, bool) {
	neg := strings.HasPrefix(lit, "-")
	s := strings.TrimPrefix(lit, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return "", false // an exponent too long for int: FormatNumber refused it already
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp -= len(frac)
	// strip leading and trailing zeros
	i := 0
	for i < len(digits) && digits[i] == '0' {
		i++
	}
	digits = digits[i:]
	j := len(digits)
	for j > 0 && digits[j-1] == '0' {
		j--
	}
	exp += len(digits) - j
	digits = digits[:j]
	if digits == "" {
		return "0", true
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + digits + "e" + strconv.Itoa(exp), true
}
