// Canonicalises a JSON-LD document with jsonld.js (rdf-canonize, RDFC-1.0,
// safe mode) and writes the canonical N-Quads to stdout. Every remote
// document load is refused (nothing is fetched). With --bench, prints only
// one JSON line: {"seconds", "max_rss_mib", "bytes", "sha256"}.
// Usage: node jsonld-canon.mjs DOC.jsonld [--bench]
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import jsonld from 'jsonld';

const bench = process.argv.includes('--bench');
const t0 = process.hrtime.bigint();
const doc = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const documentLoader = async (url) => {
  throw new Error(`offline: refusing to load ${url}`);
};
const nq = await jsonld.canonize(doc, {
  algorithm: 'RDFC-1.0', format: 'application/n-quads', safe: true, documentLoader,
});
if (bench) {
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const sha256 = createHash('sha256').update(nq, 'utf8').digest('hex');
  const maxRss = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(JSON.stringify({ seconds, max_rss_mib: maxRss, bytes: Buffer.byteLength(nq, 'utf8'), sha256 }) + '\n');
} else {
  process.stdout.write(nq);
}
