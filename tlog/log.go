package tlog

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql" // the database/sql driver of the mysql storage
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/storage/mysql"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/canon"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/internal/jsontree"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/tlog/bundle"
)

// configFormat is the format string of a log's configuration file.
const configFormat = "witness-log/v1"

// configName is the configuration file in a POSIX log's folder.
const configName = "witness-log.json"

// Config is what witness keeps about a log beside it: its origin, its
// verifier key, and where the private key is (a keyring and key id; the
// secret itself stays in the keyring). Witnesses lists the URLs of
// tlog-witnesses asked to cosign each new checkpoint.
type Config struct {
	Origin    string
	LogKey    string // signed-note verifier key
	KeyID     string
	Keyring   string // absolute path of the keyring holding KeyID
	Witnesses []string
}

// Marshal returns the configuration's canonical JSON.
func (c Config) Marshal() ([]byte, error) {
	ws := c.Witnesses
	if ws == nil {
		ws = []string{}
	}
	return canon.Marshal(map[string]any{
		"format": configFormat, "origin": c.Origin, "log_key": c.LogKey,
		"key_id": c.KeyID, "keyring": c.Keyring, "witnesses": ws,
	})
}

// ReadConfig reads DIR/witness-log.json.
func ReadConfig(dir string) (*Config, error) {
	p := filepath.Join(dir, configName)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, exitcode.Input("read log configuration", err, "create the log with 'witness log init "+dir+"'")
	}
	root, err := jsontree.Parse(data, p)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err, "")
	}
	var perr error
	r := jsontree.NewObjectReader(p, "", root, &perr)
	if f := r.String("format", true); perr == nil && f != configFormat {
		r.Fail("format", fmt.Sprintf("want %q, got %q", configFormat, f))
	}
	c := &Config{Origin: r.String("origin", true), LogKey: r.String("log_key", true), KeyID: r.String("key_id", true),
		Keyring: r.String("keyring", true), Witnesses: r.Strings("witnesses", false)}
	r.Done()
	if perr != nil {
		return nil, exitcode.New(exitcode.Usage, perr, "restore the file 'witness log init' wrote")
	}
	return c, nil
}

// Storage names where a log lives: "posix:DIR" (or a bare folder) or
// "mysql:DSN".
type Storage struct {
	Kind string // "posix" or "mysql"
	Arg  string // the folder or the DSN
}

// ParseStorage reads a --storage value.
func ParseStorage(s string) (Storage, error) {
	kind, arg, ok := strings.Cut(s, ":")
	switch {
	case ok && kind == "posix" && arg != "":
		return Storage{"posix", arg}, nil
	case ok && kind == "mysql" && arg != "":
		return Storage{"mysql", arg}, nil
	case !strings.Contains(s, ":") && s != "":
		return Storage{"posix", s}, nil
	}
	return Storage{}, exitcode.New(exitcode.Usage, fmt.Errorf("storage %q: want posix:DIR or mysql:DSN", s),
		"for example --storage posix:./log or --storage 'mysql:user@unix(/run/mysqld.sock)/witness'")
}

// Options configure an open log.
type Options struct {
	Origin string
	Signer keyring.Signer // the log's Ed25519 key
	// Witnesses are tlog-witness URLs asked to cosign each checkpoint an
	// anchor returns; a witness that refuses or cannot be reached is
	// reported in Bundle warnings, never fatal.
	Witnesses []string
	// BatchAge bounds how long an entry waits for its batch (default 20ms).
	BatchAge time.Duration
	// Now is the clock of witness requests (default time.Now).
	Now func() time.Time
}

// Log is an open log: an appender and a reader.
type Log struct {
	origin    string
	logKey    string
	appender  *tessera.Appender
	shutdown  func(context.Context) error
	reader    tessera.LogReader
	awaiter   *tessera.PublicationAwaiter
	witnesses []string
	db        *sql.DB
	cancel    context.CancelFunc
	mu        sync.Mutex // serialises cosigning, which reads witness state
}

// Init creates a POSIX log in dir: its configuration (origin, verifier
// key, the keyring and id of its key) and its first, empty checkpoint.
func Init(ctx context.Context, dir string, cfg Config, s keyring.Signer) (*Config, error) {
	if _, err := os.Stat(filepath.Join(dir, configName)); err == nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("%s: a log is already there", dir), "choose another folder; a log is never re-created")
	}
	_, vkey, err := NoteSigner(cfg.Origin, s)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err, "")
	}
	cfg.LogKey, cfg.KeyID = vkey, s.KeyID()
	if cfg.Keyring, err = filepath.Abs(cfg.Keyring); err != nil {
		return nil, err
	}
	data, err := cfg.Marshal()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("create log folder: %w", err), "")
	}
	if err := atomicfile.Write(filepath.Join(dir, configName), append(data, '\n'), atomicfile.Options{Flag: "log folder"}); err != nil {
		return nil, err
	}
	l, err := Open(ctx, Storage{"posix", dir}, Options{Origin: cfg.Origin, Signer: s})
	if err != nil {
		return nil, err
	}
	return &cfg, l.Close(ctx)
}

// mysqlMaxConns bounds the connections one process opens to MySQL.
const mysqlMaxConns = 32

// Open opens the log in storage for appending and reading.
func Open(ctx context.Context, st Storage, o Options) (*Log, error) {
	ns, vkey, err := NoteSigner(o.Origin, o.Signer)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err, "")
	}
	if o.BatchAge <= 0 {
		o.BatchAge = 20 * time.Millisecond
	}
	// the shortest checkpoint interval each driver accepts: an anchor
	// waits for the checkpoint that covers its entry
	interval := 100 * time.Millisecond
	if st.Kind == "mysql" {
		interval = time.Second
	}
	opts := tessera.NewAppendOptions().WithCheckpointSigner(ns).
		WithBatching(256, o.BatchAge).WithCheckpointInterval(interval).
		WithCheckpointRepublishInterval(0)
	// Processes that open a new MySQL log at once race to create its empty
	// tree, and the database may end all but one with a deadlock (MySQL
	// error 1213, "try restarting transaction"): the losers try again.
	var err2 error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		var l *Log
		l, err2 = openOnce(ctx, st, opts, o, vkey)
		if err2 == nil {
			return l, nil
		}
		if st.Kind != "mysql" || !strings.Contains(err2.Error(), "Error 1213") {
			break
		}
	}
	return nil, err2
}

func openOnce(ctx context.Context, st Storage, opts *tessera.AppendOptions, o Options, vkey string) (*Log, error) {
	ctx, cancel := context.WithCancel(ctx)
	l := &Log{origin: o.Origin, logKey: vkey, witnesses: o.Witnesses, cancel: cancel}
	fail := func(err error, hint string) (*Log, error) {
		cancel()
		if l.db != nil {
			l.db.Close()
		}
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("open log %s: %w", st.Kind, err), hint)
	}
	var d tessera.Driver
	var err error
	switch st.Kind {
	case "posix":
		d, err = posixDriver(ctx, st.Arg)
	case "mysql":
		var db *sql.DB
		if db, err = sql.Open("mysql", st.Arg); err == nil {
			// bounded, so that many anchors at once wait for a
			// connection instead of exceeding the server's limit
			db.SetMaxOpenConns(mysqlMaxConns)
			l.db = db
			if err = initMySQL(ctx, db); err == nil {
				d, err = mysql.New(ctx, db)
			}
		}
	default:
		err = fmt.Errorf("unknown storage %q", st.Kind)
	}
	if err != nil {
		return fail(err, "check the folder or the database DSN")
	}
	a, shutdown, r, err := tessera.NewAppender(ctx, d, opts)
	if err != nil {
		return fail(err, "")
	}
	l.appender, l.shutdown, l.reader = a, shutdown, r
	l.awaiter = tessera.NewPublicationAwaiter(ctx, r.ReadCheckpoint, 20*time.Millisecond)
	return l, nil
}

// LogKey is the log's signed-note verifier key.
func (l *Log) LogKey() string { return l.logKey }

// Reader is the log's tlog-tiles read access.
func (l *Log) Reader() bundle.Log { return newTiles(l.reader) }

// Close shuts the appender down once what was added is integrated.
func (l *Log) Close(ctx context.Context) error {
	err := l.shutdown(ctx)
	l.cancel()
	if l.db != nil {
		l.db.Close()
	}
	return err
}

// Anchor appends entry and returns its bundle: its index, the inclusion
// proof and the checkpoint of the tree that holds it, with the
// cosignatures of the configured witnesses. warnings says which witnesses
// did not cosign.
func (l *Log) Anchor(ctx context.Context, e bundle.Entry) (b *bundle.Bundle, warnings []string, err error) {
	data, err := e.Marshal()
	if err != nil {
		return nil, nil, err
	}
	idx, cpRaw, err := l.awaiter.Await(ctx, l.appender.Add(ctx, tessera.NewEntry(data)))
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Failure, fmt.Errorf("append to log %s: %w", l.origin, err), "check the log's storage")
	}
	cp, err := bundle.OpenCheckpoint(cpRaw, l.logKey)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Failure, fmt.Errorf("log %s: its own checkpoint: %w", l.origin, err), "")
	}
	pb, err := client.NewProofBuilder(ctx, cp.Size, l.reader.ReadTile)
	if err != nil {
		return nil, nil, err
	}
	p, err := pb.InclusionProof(ctx, idx.Index)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Failure, fmt.Errorf("log %s: inclusion proof of %d: %w", l.origin, idx.Index, err), "")
	}
	b = &bundle.Bundle{LogKey: l.logKey, Entry: e, Index: idx.Index, Proof: p, Checkpoint: cpRaw}
	for _, w := range l.witnesses {
		l.mu.Lock()
		sigs, err := requestCosignature(ctx, w, cp, newTiles(l.reader))
		l.mu.Unlock()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("witness %s did not cosign: %v", w, err))
			continue
		}
		b.Checkpoint = bundle.AddSignatures(b.Checkpoint, sigs)
	}
	if _, err := b.Verify(l.logKey); err != nil {
		return nil, nil, exitcode.New(exitcode.Failure, fmt.Errorf("log %s: the bundle it made does not verify: %w", l.origin, err), "")
	}
	return b, warnings, nil
}
