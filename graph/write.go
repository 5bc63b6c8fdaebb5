package graph

import (
	"bytes"
	"fmt"
	"io"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

// WriteOptions say what Write writes: the format, the graph's options, and
// the options of the picture and of the external sort.
type WriteOptions struct {
	// Format is "jsonld", "nquads" or "dot".
	Format string
	Build  Options
	DOT    DOTOptions
	Stream StreamOptions
	// Overlay, when set, adds to the built graph before it is written
	// (witness graph --firewall-audit); the graph is then built in
	// memory rather than streamed.
	Overlay func(*Graph) error
}

// WriteStats are the graph digest (the sha256 hex of the canonical
// N-Quads) and the number of quads, whatever the format written.
type WriteStats struct {
	Digest string
	Quads  int64
}

// Write writes the graph of one event log (src) or of the logs of one run
// (logs, joined by BuildRun; src nil) to out in o.Format. One log without
// an overlay is streamed with bounded memory (StreamJSONLD, StreamNQuads,
// StreamDOT); otherwise the graph is built in memory and written.
func Write(out io.Writer, src EventSource, logs []LogInput, o WriteOptions) (WriteStats, error) {
	if src != nil && o.Overlay == nil {
		var st StreamStats
		var err error
		switch o.Format {
		case "jsonld":
			st, err = StreamJSONLD(src, out, o.Build, o.Stream)
		case "nquads":
			st, err = StreamNQuads(src, out, o.Build, o.Stream)
		case "dot":
			st, err = streamDOT(src, out, o.Build, o.DOT, o.Stream)
		default:
			return WriteStats{}, fmt.Errorf("graph: unknown format %q", o.Format)
		}
		if err != nil {
			return WriteStats{}, err
		}
		return WriteStats{Digest: st.Digest, Quads: st.Quads}, nil
	}
	g, err := buildFor(src, logs, o)
	if err != nil {
		return WriteStats{}, err
	}
	var cnt lineCounter
	digest, err := g.WriteNQuads(&cnt)
	if err != nil {
		return WriteStats{}, err
	}
	switch o.Format {
	case "jsonld":
		err = g.WriteJSONLD(out)
	case "nquads":
		_, err = g.WriteNQuads(out)
	default:
		err = g.WriteDOT(out, o.DOT)
	}
	if err != nil {
		return WriteStats{}, exitcode.New(exitcode.Failure, fmt.Errorf("write graph: %w", err), "")
	}
	return WriteStats{Digest: digest, Quads: cnt.n}, nil
}

// buildFor builds the graph of src, or of the run of logs, in memory and
// adds o.Overlay.
func buildFor(src EventSource, logs []LogInput, o WriteOptions) (*Graph, error) {
	var g *Graph
	if src != nil {
		var err error
		if g, err = Build(src, o.Build); err != nil {
			return nil, err
		}
	} else {
		run, err := BuildRun(logs, o.Build)
		if err != nil {
			return nil, err
		}
		g = run.Graph
	}
	if o.Overlay != nil {
		if err := o.Overlay(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// lineCounter counts the lines written to it: the quads of N-Quads.
type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
