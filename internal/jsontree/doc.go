// Package jsontree owns strict, position-aware JSON parsing for witness's
// input files (seals, agent specs, keyrings, trust files). It parses a
// document into a tree that remembers the line of every value and key,
// refuses duplicate keys, invalid UTF-8 and trailing data, and offers an
// object reader that names the file, line and field in every error and
// refuses unknown fields.
package jsontree
