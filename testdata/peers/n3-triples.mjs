// Parses an N-Quads file with the n3 library (an RDF parser independent of
// witness and json-gold) and prints its triples as sorted JSON lines:
// [subject, predicate, objectKind, objectValue, datatype, language, graph].
// Usage: node n3-triples.mjs FILE.nq
import { readFileSync } from 'node:fs';
import N3 from 'n3';

const text = readFileSync(process.argv[2], 'utf8');
const parser = new N3.Parser({ format: 'N-Quads' });
const rows = parser.parse(text).map((q) => JSON.stringify([
  q.subject.value,
  q.predicate.value,
  q.object.termType,
  q.object.value,
  q.object.termType === 'Literal' ? q.object.datatype.value : '',
  q.object.termType === 'Literal' ? q.object.language : '',
  q.graph.value,
]));
rows.sort();
process.stdout.write(rows.join('\n') + (rows.length ? '\n' : ''));
