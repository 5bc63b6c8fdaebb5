package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Indent returns canonical JSON b re-laid out the way Python's
// json.dumps(indent=2, sort_keys=True) lays it out: two-space indent, ": "
// after keys, one member or element per line, [] and {} for empty
// containers, no trailing newline. String bytes are kept as they are. b must
// already be canonical (sorted keys), e.g. the output of Marshal.
func Indent(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, fmt.Errorf("canonical json: indent: %w", err)
	}
	return out.Bytes(), nil
}

// ASCII rewrites JSON text b with every non-ASCII character escaped as
// \uxxxx (lowercase hex; characters above U+FFFF as a surrogate pair), which
// is what Python's json.dumps writes with ensure_ascii left on. Non-ASCII
// bytes can only occur inside strings, so the rewrite is safe on any valid
// JSON text.
func ASCII(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if r > 0xFFFF {
			r -= 0x10000
			writeU(&out, 0xD800+(r>>10))
			writeU(&out, 0xDC00+(r&0x3FF))
			continue
		}
		writeU(&out, r)
	}
	return out.Bytes()
}

func writeU(out *bytes.Buffer, r rune) {
	out.WriteString(`\u`)
	out.WriteByte(hexdigits[(r>>12)&0xF])
	out.WriteByte(hexdigits[(r>>8)&0xF])
	out.WriteByte(hexdigits[(r>>4)&0xF])
	out.WriteByte(hexdigits[r&0xF])
}
