package graph

import (
	"bytes"
	"testing"
)

// serialSource hides the FastReader behind it, so streamBlocks decodes
// it in one goroutine (decodeSerial).
type serialSource struct{ EventSource }

func (s serialSource) Name() string { return "log" }

// TestStreamParallelDecodeSameErrors: the parallel decoders give the
// digest and the errors (which line, which words) of the serial one, for
// bad lines in the first batch, on a batch boundary, in the last line,
// and a last line cut off.
func TestStreamParallelDecodeSameErrors(t *testing.T) {
	good := synthetic(t, 1200, 1)
	lines := bytes.SplitAfter(good, []byte("\n"))
	if len(lines) < 1100 {
		t.Fatalf("synthetic log has %d lines", len(lines))
	}
	mutate := func(i int, with string) []byte {
		var b bytes.Buffer
		for j, l := range lines {
			if j == i {
				b.WriteString(with)
				continue
			}
			b.Write(l)
		}
		return b.Bytes()
	}
	last := len(lines) - 2 // SplitAfter leaves an empty tail
	cases := map[string][]byte{
		"good":       good,
		"bad first":  mutate(0, "{not json\n"),
		"blank 512":  mutate(511, "\n"),
		"bad 513":    mutate(512, "{\"v\":1}\n"),
		"bad 1025":   mutate(1024, "[]\n"),
		"bad last":   mutate(last, "{\n"),
		"cut off":    good[:len(good)-40],
		"empty":      nil,
		"no newline": good[:len(good)-1],
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			var par, ser bytes.Buffer
			ps, perr := StreamNQuads(NewEventSource(bytes.NewReader(log), "log"), &par, Options{}, StreamOptions{RunBytes: 1 << 16})
			ss, serr := StreamNQuads(serialSource{NewEventSource(bytes.NewReader(log), "log")}, &ser, Options{}, StreamOptions{RunBytes: 1 << 16})
			if (perr == nil) != (serr == nil) || (perr != nil && perr.Error() != serr.Error()) {
				t.Fatalf("parallel: %v\nserial: %v", perr, serr)
			}
			if perr != nil {
				t.Log(perr)
				return
			}
			if ps.Digest != ss.Digest || ps.Events != ss.Events || !bytes.Equal(par.Bytes(), ser.Bytes()) {
				t.Fatalf("parallel %+v, serial %+v", ps, ss)
			}
		})
	}
}
