// Package httpcoding undoes an HTTP response's Content-Encoding the way the
// clients the witness follows read it: the fetch of Node (undici), under
// the openai, Anthropic and MCP TypeScript SDKs (docs/design/wire-reading.md,
// "Content encodings").
//
// The rules, as undici applies them: the header is lower-cased and split
// at commas; the codings are undone last first; gzip and x-gzip are gzip
// (several members read one after the other), deflate is zlib-wrapped when
// the first byte says so (low nibble 8) and raw otherwise; a coding the
// client does not know (identity among them) makes it read the body as
// sent, every coding ignored. Where a witness reading could differ from
// the client's, Decode says so in Result.Doubt and the caller records the
// answer as ambiguous: a body cut inside its compressed stream (undici
// flushes what it decoded and reads the prefix), bytes after the last
// gzip member (undici fails the body), and the codings the witness cannot
// undo (br, zstd).
package httpcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Result is a decoded body.
type Result struct {
	// Body is what the client reads: the decoded bytes, the body as sent
	// when nothing is to be undone, or what was decoded before a cut.
	Body []byte
	// Codings are the codings undone, in the header's order.
	Codings []string
	// Doubt is why the client's reading may differ from Body ("" when it
	// cannot).
	Doubt string
	// Cut is true when a compressed stream ended early: Body is the prefix
	// the client would read.
	Cut bool
}

// ErrTooLarge is returned when the decoded body exceeds the limit.
var ErrTooLarge = errors.New("decoded body over the limit (a compression bomb?)")

// known are the codings undici decodes.
var known = map[string]bool{"gzip": true, "x-gzip": true, "deflate": true, "br": true, "zstd": true}

// Codings splits a Content-Encoding header value as undici does.
func Codings(header string) []string {
	if strings.TrimSpace(header) == "" {
		return nil
	}
	parts := strings.Split(strings.ToLower(header), ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Decode undoes the codings of header on body, decoding at most limit
// bytes (ErrTooLarge past it: a compression bomb as far as the reader
// goes). It never fails on bad input: a coding it cannot undo or a
// corrupt stream gives a Result whose Doubt says why, with Body nil.
func Decode(body []byte, header string, limit int64) (Result, error) {
	cs := Codings(header)
	for _, c := range cs {
		if !known[c] {
			r := Result{Body: body}
			if c != "identity" || len(cs) > 1 {
				r.Doubt = fmt.Sprintf("content coding %q is unknown to the client's fetch, which then reads the body as sent; other clients may refuse it", c)
			}
			return r, nil
		}
	}
	out := Result{Body: body}
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		b, cut, err := undo(out.Body, c, limit)
		if errors.Is(err, ErrTooLarge) {
			return Result{}, fmt.Errorf("content coding %s: %w (%d bytes)", c, ErrTooLarge, limit)
		}
		if err != nil {
			return Result{Codings: cs, Doubt: fmt.Sprintf("content coding %s: %v: the client's reading of it is not known", c, err)}, nil
		}
		out.Body = b
		if cut {
			out.Cut = true
			out.Doubt = fmt.Sprintf("content coding %s: the compressed stream is cut; the client reads the %d bytes decoded before the cut", c, len(b))
		}
	}
	out.Codings = cs
	return out, nil
}

// undo undoes one coding; cut reports a stream that ended early (b holds
// what was decoded before).
func undo(body []byte, coding string, limit int64) (b []byte, cut bool, err error) {
	var r io.Reader
	switch coding {
	case "gzip", "x-gzip":
		return gunzip(body, limit)
	case "deflate":
		if len(body) > 0 && body[0]&0x0F == 0x08 {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return nil, true, nil
				}
				return nil, false, err
			}
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(body))
		}
	default:
		return nil, false, fmt.Errorf("the witness does not decode %s", coding)
	}
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(r, limit+1))
	if n > limit {
		return nil, false, ErrTooLarge
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return out.Bytes(), true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return out.Bytes(), false, nil
}

// gunzip reads the gzip members of body one after the other; bytes after
// the last member that do not start another are an error, as they are to
// the client.
func gunzip(body []byte, limit int64) (b []byte, cut bool, err error) {
	br := bytes.NewReader(body)
	var out bytes.Buffer
	for first := true; ; first = false {
		rest := body[len(body)-br.Len():]
		if !first && len(rest) == 0 {
			return out.Bytes(), false, nil
		}
		if len(rest) >= 2 && (rest[0] != 0x1f || rest[1] != 0x8b) {
			if first {
				return nil, false, errors.New("not a gzip stream")
			}
			return nil, false, fmt.Errorf("%d bytes after the last gzip member", len(rest))
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return out.Bytes(), true, nil
			}
			return nil, false, err
		}
		zr.Multistream(false)
		n, err := io.Copy(&out, io.LimitReader(zr, limit+1-int64(out.Len())))
		if int64(out.Len()) > limit || (n > 0 && int64(out.Len()) > limit) {
			return nil, false, ErrTooLarge
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return out.Bytes(), true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}
