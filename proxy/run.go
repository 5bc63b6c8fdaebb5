package proxy

import (
	"context"
	"errors"
	"fmt"
	"github.com/agent-trace-witness/witness/capture"
	"github.com/agent-trace-witness/witness/derive"
	"github.com/agent-trace-witness/witness/eventlog"
	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options configure a proxied, recorded session (`witness proxy`).
type Options struct {
	OutDir string
	// Files are the evidence rules for the cassette and the event log
	// (--force, the command's inputs; see derive.CreateRecordingFiles):
	// an existing recording is refused unless Files.Force.
	Files       atomicfile.Options
	Command     []string
	Env         []string // the server's environment (NAME=VALUE); nil inherits the proxy's
	SealPath    string
	EffectsPath string
	Signers     []eventlog.Signer
	Redactor    *derive.Redactor    // redaction of the cassette and the events (nil: none)
	Notes       []string            // extra notes for the session header (the command's start-up warnings)
	Getenv      func(string) string // for ATW_WITNESS_TS

	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Signals <-chan os.Signal

	StdinGrace time.Duration // after the host closes stdin, wait this long for the server to exit before SIGTERM (default 5s)
	KillGrace  time.Duration // after SIGTERM, wait this long before SIGKILL (default 5s)
	DrainWait  time.Duration

	// Started, when set, is called with the server's pid (its process
	// group id) once it runs.
	Started func(pid int)

	// SoleChild says that the calling process starts no other child while
	// Run runs (the witness proxy binary); see Forwarder.SoleChild.
	SoleChild bool
}

// Result is the outcome of a proxied session.
type Result struct {
	Outcome  *Outcome
	Cassette string
	Events   string
}

// Run records a proxied session into o.OutDir and returns the outcome. The
// error is non-nil when the session could not start (bad configuration,
// unwritable output, server not startable) or when recording failed; in the
// latter case the Result is still returned: forwarding stopped at the
// failure (nothing unrecorded was forwarded), the server was ended, and the
// event log's end records the failure when it could still be written.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Command) == 0 {
		return nil, exitcode.New(exitcode.Usage, errors.New("no server command"), "put the server command after --: witness proxy --out DIR -- node server.js")
	}
	if err := capture.StdioSupported(); err != nil {
		return nil, err
	}
	var effects *EffectMap
	if o.EffectsPath != "" {
		data, err := os.ReadFile(o.EffectsPath)
		if err != nil {
			return nil, exitcode.Input("read effects mapping", err, "check the path given to --effects")
		}
		effects, err = ParseEffects(data, o.EffectsPath)
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, err, "see docs/formats/effects.md for the mapping format")
		}
	}
	var seal *eventlog.SealRef
	if o.SealPath != "" {
		var err error
		seal, err = derive.LoadSealRef(o.SealPath)
		if err != nil {
			return nil, err
		}
	}
	casPath := filepath.Join(o.OutDir, derive.CassetteFile)
	evPath := filepath.Join(o.OutDir, derive.EventsFile)
	files := o.Files
	if files.Flag == "" {
		files.Flag = "--out"
	}
	casFile, evFile, err := derive.CreateRecordingFiles(o.OutDir, files)
	if err != nil {
		return nil, err
	}
	defer casFile.Close()
	defer evFile.Close()

	stderr := &lockedWriter{w: o.Stderr}
	if o.Stderr == nil {
		stderr.w = io.Discard
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	names := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			names = append(names, k)
		}
	}
	frozen := o.Getenv != nil && o.Getenv(eventlog.EnvTS) != ""
	rec, err := NewRecording(RecordingOptions{
		Cassette: casFile, Events: evFile,
		Command: o.Command[0], Args: o.Command[1:], EnvNames: names,
		Started: eventlog.Timestamp(o.Getenv),
		Frozen:  frozen, Seal: seal, Effects: effects, Signers: o.Signers, Redactor: o.Redactor, Notes: o.Notes,
	})
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("start cassette %s: %w", casPath, err), "")
	}
	fw := &Forwarder{
		Command: o.Command, Env: env,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: stderr,
		Signals: o.Signals, StdinGrace: o.StdinGrace, KillGrace: o.KillGrace, DrainWait: o.DrainWait,
		Sink: rec, Started: o.Started, SoleChild: o.SoleChild,
	}
	out, err := fw.Run(ctx)
	if err != nil {
		return nil, exitcode.New(exitcode.Failure, err, "check that the server command exists and is executable")
	}
	res := &Result{Outcome: out, Cassette: casPath, Events: evPath}
	recErr := out.RecordErr
	if cerr := rec.Close(out.Failure); cerr != nil && recErr == nil {
		recErr = cerr
	}
	if recErr == nil {
		recErr = errors.Join(atomicfile.SyncLive(casFile), atomicfile.SyncLive(evFile))
	}
	if recErr != nil {
		return res, exitcode.New(exitcode.Failure, fmt.Errorf("recording failed; nothing unrecorded was forwarded, and forwarding stopped there: %w", recErr), "check the space and permissions of the --out directory")
	}
	return res, nil
}

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) that
// `witness proxy` sets for its process. The recording holds at most about
// two maximum-size lines per stream (docs/design/proxy.md); the limit makes
// the garbage collector return their memory before the heap doubles, so
// that the peak RSS stays under 256 MiB whatever either side sends.
const MemoryLimit = 160 << 20

// GCPercent is the garbage collector's target (runtime/debug.SetGCPercent)
// that `witness proxy` sets: the live heap of a session is small, so a
// larger target makes collections rarer without coming near MemoryLimit.
const GCPercent = 400
