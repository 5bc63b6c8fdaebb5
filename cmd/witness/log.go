package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/httpbound"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog"
)

func newLogCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "log",
		Short: "Run a transparency log that anchors session ends, and witnesses that cosign it",
		Long: `log runs the transparency log that 'capture', 'proxy' and 'capture append'
anchor session ends in with --log DIR|URL, and the witnesses that cosign its
checkpoints (C2SP tlog-checkpoint, tlog-tiles, tlog-cosignature,
tlog-witness; docs/design/transparency.md). 'verify --log' checks a session
against it: a file cut back to an earlier checkpoint is tampered.`,
		Args: cobra.NoArgs,
	}
	c.AddCommand(newLogInitCmd(a), newLogServeCmd(a), newLogWitnessCmd(a))
	return c
}

type logInitOptions struct {
	Keys      keyringOptions
	Backend   string
	Origin    string
	Witnesses []string
}

func newLogInitCmd(a *app) *cobra.Command {
	var o logInitOptions
	c := &cobra.Command{
		Use:   "init DIR --keyring PATH [--origin NAME] [--witness URL]",
		Short: "Create a transparency log in a folder (Tessera's POSIX driver)",
		Long: `init creates a tile-based log in DIR with Tessera's POSIX driver: the
tlog-tiles files (checkpoint, tile/...), and DIR/witness-log.json with its
origin, its signed-note verifier key and where its private key is. The key
is the active Ed25519 key of --keyring, created there when the keyring has
no active key (in the OS keyring with --backend os); the secret never goes
into DIR. --witness names a tlog-witness asked to cosign each checkpoint an
anchor returns (repeatable).`,
		Example: `  witness log init ./log --keyring log-keys.json --origin example.com/witness-log`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogInit(a, args[0], o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Role: "keyring of the log's Ed25519 key (created when it has no active key)", Required: true})
	c.Flags().StringVar(&o.Backend, "backend", "file", "where a new key's secret lives: file (keys.json) or os (OS keyring)")
	completeChoices(c, "backend", keyBackends...)
	c.Flags().StringVar(&o.Origin, "origin", "witness.local/log", "the log's origin: the first line of its checkpoints and its key's name")
	c.Flags().StringArrayVar(&o.Witnesses, "witness", nil, "URL of a tlog-witness that cosigns the log's checkpoints (repeatable)")
	return c
}

// logSigner returns the active Ed25519 key of the keyring at path,
// generating one when the keyring has no active key.
func logSigner(a *app, k *keyringOptions, backend string) (keyring.Signer, string, error) {
	if err := checkChoice("backend", backend, keyBackends...); err != nil {
		return nil, "", err
	}
	path, opts, err := k.Path(a, backend)
	if err != nil {
		return nil, "", err
	}
	kr, err := keyring.Open(path, opts)
	if err != nil {
		return nil, "", err
	}
	if _, err := kr.Active(); err != nil {
		e, err := keyring.Generate(path, opts, keyring.AlgEd25519)
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(a.stdout, "generated key_id=%s algorithm=ed25519 backend=%s -> %s\n", e.KeyID, e.Backend, path)
		if kr, err = keyring.OpenExisting(path, opts); err != nil {
			return nil, "", err
		}
	}
	s, err := kr.ActiveSigner()
	if err != nil {
		return nil, "", err
	}
	if s.Algorithm() != keyring.SigEd25519 {
		return nil, "", usageError(fmt.Errorf("keyring %s: the active key %s is %s; a log or witness signs with ed25519", path, s.KeyID(), s.Algorithm()),
			"use another --keyring, or 'witness rotate-key --alg ed25519'")
	}
	return s, path, nil
}

func runLogInit(a *app, dir string, o logInitOptions) error {
	s, path, err := logSigner(a, &o.Keys, o.Backend)
	if err != nil {
		return err
	}
	cfg, err := tlog.Init(context.Background(), dir, tlog.Config{Origin: o.Origin, Keyring: path, Witnesses: o.Witnesses}, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "log %s created in %s\nlog key: %s\n", cfg.Origin, dir, cfg.LogKey)
	return nil
}

// openLogDir opens the POSIX log in dir with the key its configuration names.
func openLogDir(a *app, dir string) (*tlog.Log, *tlog.Config, error) {
	cfg, err := tlog.ReadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	opts, err := keyringOpenOptions(a.getenv, "")
	if err != nil {
		return nil, nil, err
	}
	kr, err := keyring.OpenExisting(cfg.Keyring, opts)
	if err != nil {
		return nil, nil, err
	}
	s, err := kr.Signer(cfg.KeyID)
	if err != nil {
		return nil, nil, err
	}
	l, err := tlog.Open(context.Background(), tlog.Storage{Kind: "posix", Arg: dir}, tlog.Options{Origin: cfg.Origin, Signer: s, Witnesses: cfg.Witnesses})
	return l, cfg, err
}

type logServeOptions struct {
	Storage   string
	Listen    string
	MaxConns  int
	Keys      keyringOptions
	Origin    string
	Witnesses []string
}

func newLogServeCmd(a *app) *cobra.Command {
	var o logServeOptions
	c := &cobra.Command{
		Use:   "serve --storage posix:DIR|mysql:DSN --listen ADDR",
		Short: "Serve a log over HTTP: appends from other machines, tiles and checkpoints for readers",
		Long: `serve serves the log at --listen until SIGINT or SIGTERM: POST /add takes an
entry (canonical JSON, docs/formats/tlog-entry.md) and answers its bundle
(docs/formats/tlog-bundle.md); GET /checkpoint and /tile/... are the
tlog-tiles read API, and GET /log-key the log's verifier key. --storage
posix:DIR serves a log made by 'log init'; --storage mysql:DSN keeps the
log in MySQL or MariaDB (Tessera's MySQL driver, beta), for logs several
machines append to, and then needs --keyring and --origin. It prints
"listening on http://HOST:PORT" on stderr once it accepts.`,
		Example: `  witness log serve --storage posix:./log --listen 127.0.0.1:8080
  witness log serve --storage 'mysql:witness@unix(/run/mysqld/mysqld.sock)/witness' --keyring log-keys.json --origin example.com/log --listen :8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogServe(a, o)
		},
	}
	c.Flags().StringVar(&o.Storage, "storage", "", "posix:DIR (a log from 'log init') or mysql:DSN")
	c.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address to listen on")
	c.Flags().IntVar(&o.MaxConns, "max-conns", httpbound.DefaultMaxConns, "connections open at once; past it, new ones wait to be accepted")
	o.Keys.AddFlags(c, keyUse{Role: "with mysql: keyring of the log's Ed25519 key (created when it has no active key)"})
	c.Flags().StringVar(&o.Origin, "origin", "", "with mysql: the log's origin")
	c.Flags().StringArrayVar(&o.Witnesses, "witness", nil, "with mysql: URL of a tlog-witness that cosigns (repeatable)")
	c.MarkFlagRequired("storage")
	return c
}

func runLogServe(a *app, o logServeOptions) error {
	st, err := tlog.ParseStorage(o.Storage)
	if err != nil {
		return err
	}
	var l *tlog.Log
	if st.Kind == "posix" {
		if o.Origin != "" || o.Keys.Keyring != "" {
			return usageError(errors.New("--origin and --keyring are for mysql storage; a POSIX log's are in its witness-log.json"), "drop them")
		}
		if l, _, err = openLogDir(a, st.Arg); err != nil {
			return err
		}
	} else {
		if o.Origin == "" || o.Keys.Keyring == "" {
			return usageError(errors.New("mysql storage needs --origin and --keyring"), "the database holds the log, not its key or name")
		}
		s, _, err := logSigner(a, &o.Keys, keyring.BackendFile)
		if err != nil {
			return err
		}
		if l, err = tlog.Open(context.Background(), st, tlog.Options{Origin: o.Origin, Signer: s, Witnesses: o.Witnesses}); err != nil {
			return err
		}
	}
	defer l.Close(context.Background())
	fmt.Fprintf(a.stderr, "log key: %s\n", l.LogKey())
	return serveHTTP(a, o.Listen, o.MaxConns, tlog.Handler(l, func(format string, args ...any) {
		fmt.Fprintf(a.stderr, "witness: log: "+format+"\n", args...)
	}))
}

// serveHTTP serves h on addr until SIGINT or SIGTERM, with at most
// maxConns connections open at once and httpbound's other bounds.
func serveHTTP(a *app, addr string, maxConns int, h http.Handler) error {
	if maxConns <= 0 {
		return usageError(fmt.Errorf("--max-conns %d: give a positive number", maxConns), fmt.Sprintf("the default is %d", httpbound.DefaultMaxConns))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitcode.New(exitcode.Failure, fmt.Errorf("listen on %s: %w", addr, err), "choose another --listen address")
	}
	srv, ln := httpbound.Server(h, ln, httpbound.ServerOptions{MaxConns: maxConns})
	fmt.Fprintf(a.stderr, "listening on http://%s\n", ln.Addr())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return exitcode.New(exitcode.Failure, err, "")
	case <-sigs:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

type logWitnessOptions struct {
	Keys     keyringOptions
	Backend  string
	Name     string
	Logs     []string
	State    string
	Listen   string
	MaxConns int
}

func newLogWitnessCmd(a *app) *cobra.Command {
	var o logWitnessOptions
	c := &cobra.Command{
		Use:   "witness --keyring PATH --log-key VKEY --state DIR --listen ADDR",
		Short: "Run a C2SP tlog-witness that cosigns consistent checkpoints",
		Long: `witness serves POST /add-checkpoint (C2SP tlog-witness) at --listen until
SIGINT or SIGTERM. For each log named by --log-key (its signed-note
verifier key, as 'log init' prints it) it keeps the last size and root it
cosigned in --state, verifies the checkpoint's signature and a consistency
proof from that size, and cosigns (tlog-cosignature v1) with the active
Ed25519 key of --keyring under --name. It never cosigns a fork: a checkpoint
of the size it holds with another root, or one that does not extend it, is
refused (422), a stale old size answered with the size it holds (409).
Verifiers list the witness in a trust file ('witness key export-public')
whose key_id is --name.`,
		Example: `  witness log witness --keyring w1.json --name w1.example --log-key "$(cat log.vkey)" --state ./w1 --listen 127.0.0.1:8081`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogWitness(a, o)
		},
	}
	o.Keys.AddFlags(c, keyUse{Role: "keyring of the witness's Ed25519 key (created when it has no active key)", Required: true})
	c.Flags().StringVar(&o.Backend, "backend", "file", "where a new key's secret lives: file (keys.json) or os (OS keyring)")
	completeChoices(c, "backend", keyBackends...)
	c.Flags().StringVar(&o.Name, "name", "", "the witness's name on its cosignatures (default: its key id)")
	c.Flags().StringArrayVar(&o.Logs, "log-key", nil, "verifier key of a log to witness (repeatable)")
	c.Flags().StringVar(&o.State, "state", "", "folder keeping the last size and root cosigned per log")
	c.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:8081", "address to listen on")
	c.Flags().IntVar(&o.MaxConns, "max-conns", httpbound.DefaultMaxConns, "connections open at once; past it, new ones wait to be accepted")
	c.MarkFlagRequired("log-key")
	c.MarkFlagRequired("state")
	return c
}

func runLogWitness(a *app, o logWitnessOptions) error {
	s, _, err := logSigner(a, &o.Keys, o.Backend)
	if err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = s.KeyID()
	}
	cs, err := tlog.NewCosigner(o.Name, s)
	if err != nil {
		return usageError(err, "")
	}
	w, err := tlog.NewWitness(tlog.WitnessOptions{Cosigner: cs, Logs: o.Logs, State: o.State})
	if err != nil {
		return usageError(err, "pass the key 'witness log init' printed")
	}
	fmt.Fprintf(a.stderr, "witness %s (key %s)\n", o.Name, s.KeyID())
	return serveHTTP(a, o.Listen, o.MaxConns, w)
}

// anchorOptions is the --log flag of the recording verbs.
type anchorOptions struct {
	Log string
}

func (o *anchorOptions) AddFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.Log, "log", "", "anchor the session end in this transparency log (a folder from 'witness log init', or the URL of 'witness log serve'); the bundle goes beside the events")
}

// Anchor appends the last end of the event log to the log and writes its
// bundle beside the events. Nothing happens without --log.
// The status line goes to w (stderr for the stdio proxy, whose stdout is
// the wire).
func (o *anchorOptions) Anchor(a *app, events string, w io.Writer) error {
	if o.Log == "" {
		return nil
	}
	b, warnings, err := anchorFile(a, o.Log, events)
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "witness: warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "witness: anchored the end after %d lines at index %d of log %s -> %s\n", b.Entry.Count, b.Index, o.Log, bundlePathOf(events, b))
	return nil
}
