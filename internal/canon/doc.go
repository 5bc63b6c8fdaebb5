// Package canon owns the canonical JSON encoding used for every signed or
// hashed body in witness.
//
// The encoding is RFC 8785 (JCS): object keys sorted, no insignificant
// whitespace, strings escaped minimally, numbers in the ECMAScript shortest
// form. For the values seals hold (strings, integers, arrays, objects) the bytes
// are identical to Python's json.dumps(sort_keys=True, separators=(",", ":"),
// ensure_ascii=False), which agent-trace-witness 0.1.0 signs. Divergences are
// documented in docs/formats/canonical-json.md.
package canon
