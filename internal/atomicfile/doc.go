// Package atomicfile is the one place witness writes output files.
//
// Evidence outputs (seals, event logs, cassettes, audits, graphs, reports)
// go through Write, Create or CreateLive with an Options value, which
// enforces the evidence rules (docs/design/evidence-files.md):
//
//   - an output is never one of the command's inputs: the output path is
//     compared with every input by device and inode, so a symlink or a hard
//     link to an input is refused, with or without Force;
//   - an existing file is replaced only with Force;
//   - a new evidence file is never written through a symlink: a destination
//     that is a symlink is refused, and files are created with O_EXCL and
//     O_NOFOLLOW (or linked into place, which never follows a symlink);
//   - a device, named pipe or socket (/dev/null, /dev/stdout) is written in
//     place, and "-" means the Options' Stdout.
//
// Regular files are written to a temporary file in the same folder, synced,
// and linked (or, with Force, renamed) into place, so a reader sees either
// the old or the new content, never a mix, and a crash never leaves a
// half-written file at the destination.
//
// WriteFile is the plain atomic replace the keyring uses for its own state;
// it is not for evidence.
package atomicfile
