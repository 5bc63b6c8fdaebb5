package eventlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

// strScanRef is strScan byte by byte (the scanner before the word skip).
func strScanRef(b []byte) (n int, esc, high, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false, false, false
	}
	for i := 1; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, high, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false, false, false
					}
				}
				i += 6
			default:
				return 0, false, false, false
			}
		case c < 0x20:
			return 0, false, false, false
		default:
			high = high || c >= 0x80
			i++
		}
	}
	return 0, false, false, false
}

// TestStrScanWords: the eight-byte skip of strScan ends, escapes and
// rejects strings exactly as a byte-by-byte scan, whatever byte stands at
// whatever offset of a word.
func TestStrScanWords(t *testing.T) {
	special := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xc3, 0xff, 'u', 'n', '0', 'a'}
	rng := rand.New(rand.NewPCG(17, 4))
	check := func(b []byte) {
		t.Helper()
		n, esc, high, ok := strScanRef(b)
		s := &scanner{b: b}
		raw, gesc, ghigh, err := s.strScan()
		if ok != (err == nil) || ok && (len(raw) != n || s.i != n || gesc != esc || ghigh != high) {
			t.Fatalf("%q: strScan = %d %v %v %v, byte scan = %d %v %v %v", b, len(raw), gesc, ghigh, err, n, esc, high, ok)
		}
	}
	for n := 1; n < 40; n++ {
		for pos := 1; pos < n; pos++ {
			for _, c := range special {
				b := []byte{'"'}
				for len(b) < n {
					b = append(b, 'a'+byte(len(b)%26))
				}
				b[pos] = c
				check(b)
				check(append(b, '"'))
				check(append(b, '"', 'x', 'y'))
			}
		}
	}
	for range 200000 {
		b := []byte{'"'}
		for n := rng.IntN(30); n > 0; n-- {
			if rng.IntN(4) == 0 {
				b = append(b, special[rng.IntN(len(special))])
			} else {
				b = append(b, byte(rng.IntN(256)))
			}
		}
		check(b)
	}
}

// benchStrings are the string tokens of the lines of a log, as scanned.
func benchStrings(b *testing.B) [][]byte {
	data, err := os.ReadFile(os.Getenv("WITNESS_STRSCAN_LOG"))
	if err != nil {
		b.Skip("WITNESS_STRSCAN_LOG: ", err)
	}
	var toks [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		for i := 0; i < len(l); i++ {
			if l[i] != '"' {
				continue
			}
			n, _, _, ok := strScanRef(l[i:])
			if !ok {
				break
			}
			toks = append(toks, l[i:i+n])
			i += n - 1
		}
	}
	return toks
}

// BenchmarkStrScan: strScan against the byte scan on a log's strings
// (WITNESS_STRSCAN_LOG); run both in one process, alternating.
func BenchmarkStrScan(b *testing.B) {
	toks := benchStrings(b)
	b.Run("bytes", func(b *testing.B) {
		for range b.N {
			for _, t := range toks {
				strScanRef(t)
			}
		}
	})
	b.Run("words", func(b *testing.B) {
		for range b.N {
			for _, t := range toks {
				s := scanner{b: t}
				s.strScan()
			}
		}
	})
}
