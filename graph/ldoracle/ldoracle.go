// Package ldoracle runs json-gold (github.com/piprate/json-gold), a general
// JSON-LD processor, over witness graph documents: the independent oracle
// that tests and benchmarks compare the graph package's direct N-Quads
// emitter against. It never fetches a document: its loader refuses every
// URL and records that it was asked. It is not on the witness's hot path.
package ldoracle

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/piprate/json-gold/ld"
)

// Loader is a json-gold DocumentLoader that refuses every URL (the network
// and the file system alike) and records each request.
type Loader struct {
	mu       sync.Mutex
	requests []string
}

// LoadDocument refuses u.
func (l *Loader) LoadDocument(u string) (*ld.RemoteDocument, error) {
	l.mu.Lock()
	l.requests = append(l.requests, u)
	l.mu.Unlock()
	return nil, ld.NewJsonLdError(ld.LoadingDocumentFailed, "witness: offline, refusing to load "+u)
}

// Requests returns the URLs that were asked for.
func (l *Loader) Requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.requests...)
}

// options returns json-gold options for witness documents: JSON-LD 1.1,
// safe mode (undefined terms are errors, not silently dropped), URDNA2015
// (json-gold defaults to URGNA2012), and the refusing loader.
func options(l *Loader) *ld.JsonLdOptions {
	opts := ld.NewJsonLdOptions("")
	opts.ProcessingMode = ld.JsonLd_1_1
	opts.SafeMode = true
	opts.Algorithm = ld.AlgorithmURDNA2015
	opts.DocumentLoader = l
	return opts
}

// parse reads a JSON-LD document.
func parse(doc []byte) (any, error) {
	return ld.DocumentFromReader(bytes.NewReader(doc))
}

// Expand expands a JSON-LD document offline.
func Expand(doc []byte, l *Loader) ([]any, error) {
	d, err := parse(doc)
	if err != nil {
		return nil, err
	}
	return ld.NewJsonLdProcessor().Expand(d, options(l))
}

// Canonicalize writes the URDNA2015 canonical N-Quads of a JSON-LD document
// to w, the fast way: ToRDF, then the normalisation algorithm, then the
// sorted quads (never the quadratic one-call Normalize with a Format).
func Canonicalize(doc []byte, l *Loader, w io.Writer) error {
	d, err := parse(doc)
	if err != nil {
		return err
	}
	return canonicalizeParsed(d, l, w)
}

// canonicalizeParsed is Canonicalize of an already parsed document.
func canonicalizeParsed(d any, l *Loader, w io.Writer) error {
	dsAny, err := ld.NewJsonLdProcessor().ToRDF(d, options(l))
	if err != nil {
		return err
	}
	ds, ok := dsAny.(*ld.RDFDataset)
	if !ok {
		return fmt.Errorf("json-gold ToRDF returned %T", dsAny)
	}
	na := ld.NewNormalisationAlgorithm(ld.AlgorithmURDNA2015)
	na.Normalize(ds)
	sorted := &ld.RDFDataset{Graphs: map[string][]*ld.Quad{"@default": na.Quads()}}
	ser := &ld.NQuadRDFSerializer{}
	return ser.SerializeTo(w, sorted)
}
