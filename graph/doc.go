// Package graph owns the witness's testimony: the PROV-DM causal graph of an
// event log, its in-memory model, its JSON-LD form (embedded context, sorted,
// canonical JSON), its RDFC-1.0 canonical N-Quads (emitted straight from the
// model, streamed with an external sort for long logs, hashed while written)
// and its Graphviz DOT picture.
//
// Every node, qualified relations included, has an IRI minted from the session
// and event ids (see docs/formats/graph.md), so the graph has no blank nodes
// and its canonical form is simply its escaped quads, sorted and de-duplicated.
package graph
