// Package atomicfile owns crash-safe file replacement: a file is written to a
// temporary file in the same folder, synced, renamed over the target, and the
// folder is synced, so a reader sees either the old or the new content, never
// a mix, and a crash never leaves a half-written file in place.
package atomicfile
