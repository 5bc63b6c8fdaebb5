package derive

import "bytes"

// RedactBodyLines redacts a run of HTTP body lines with r's rules: each
// line (without its line end) is redacted as a JSON value by Line, and an
// SSE "data:" line has its value after "data:" redacted so. It returns raw
// itself, and false, when nothing changed (also when r is nil). The HTTP
// proxy and the HTTP capture client record bodies through it, cut at line
// ends, so that a JSON body or an SSE data line is redacted whole.
func RedactBodyLines(r *Redactor, raw []byte) ([]byte, bool) {
	if r == nil {
		return raw, false
	}
	var out []byte
	changed := false
	rest := raw
	for len(rest) > 0 {
		line := rest
		end := []byte(nil)
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
			end = []byte{'\n'}
		} else {
			rest = nil
		}
		if bytes.HasSuffix(line, []byte{'\r'}) {
			line = line[:len(line)-1]
			end = append([]byte{'\r'}, end...)
		}
		prefix := []byte(nil)
		val := line
		if bytes.HasPrefix(line, []byte("data:")) {
			n := len("data:")
			if len(line) > n && line[n] == ' ' {
				n++
			}
			prefix, val = line[:n], line[n:]
		}
		red, ch := r.Line(val)
		if ch {
			changed = true
		}
		out = append(out, prefix...)
		out = append(out, red...)
		out = append(out, end...)
	}
	if !changed {
		return raw, false
	}
	return out, true
}
