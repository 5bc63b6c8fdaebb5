// Package atomicfile is the one publisher of output files: every file
// witness writes (seals, event logs, cassettes, audits, graphs, reports,
// trust files and the keyring itself) goes through Write, Publish, Create
// or CreateLive with an Options value. See docs/design/evidence-files.md.
//
// Rules no option turns off:
//
//   - an output is never one of the command's inputs: the output path is
//     compared with every input by device and inode, so a symlink or a hard
//     link to an input is refused, with or without Force;
//   - nothing is written through a symlink: a destination that is a
//     symlink is refused, and files are created with O_EXCL and O_NOFOLLOW
//     (or linked into place, which never follows a symlink);
//   - the mode is set before the first byte is written (Perm, 0644 by
//     default), so a secret is never readable by others even for a moment;
//   - a device, named pipe or socket (/dev/null, /dev/stdout) is written in
//     place; a block device, a folder and "-" are refused.
//
// What the options choose: Force lets an existing regular file be replaced
// (evidence needs --force; the keyring always replaces itself); Inputs
// lists the files that may not be written; Staging names the staging file;
// NoSync skips the fsyncs for derived outputs.
//
// Write, Publish and Create stage the content in a temporary file in the
// destination's folder, fsync it, link it (or, with Force, rename it) into
// place and fsync the folder, so a reader sees either the old or the new
// content, never a mix, and after a crash the destination holds the old
// content or the complete new one. With NoSync (only for outputs derived
// from evidence kept elsewhere, such as the graph) the first guarantee
// holds and the second does not. CreateLive creates a recording at its
// final name, written as it happens, so a crash keeps what was recorded;
// SyncLive makes it durable once, when the recording ends. CheckAppend
// applies the rules to a log that is extended on purpose.
//
// All refusals are usage errors (exit 2) naming the flag (Options.Flag)
// and the path; I/O failures are exit 5.
package atomicfile
