package verify

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/agent-trace-witness/witness/seal"
)

// scopeOp is the operation a path scope grants.
type scopeOp string

// The operations of checkable path scopes. A write scope also grants reads.
const (
	opRead  scopeOp = "read"
	opWrite scopeOp = "write"
)

// scope is a parsed, checkable seal scope of the form "<op>:<glob>", such as
// "read:/data/**" or "write:/tmp/out/*.txt".
type scope struct {
	Raw  string
	Op   scopeOp
	Glob glob
}

// errNotPathScope is wrapped by ParseScope for scopes that are well formed
// text but not path globs witness can check (for example "net:api.example.com"
// or "admin"). Such scopes are reported as not checkable, never as violations.
var errNotPathScope = errors.New("not a path scope")

// parseScope parses a seal scope. It returns an error wrapping ErrNotPathScope
// when the scope is not of the form read:/abs/glob or write:/abs/glob, and
// another error when it looks like a path scope but its glob is malformed.
func parseScope(s string) (scope, error) {
	op, rest, ok := strings.Cut(s, ":")
	if !ok {
		return scope{}, fmt.Errorf("scope %q: %w (expected read:/path/** or write:/path/**)", s, errNotPathScope)
	}
	switch scopeOp(op) {
	case opRead, opWrite:
	default:
		return scope{}, fmt.Errorf("scope %q: %w (operation %q is not read or write)", s, errNotPathScope, op)
	}
	g, err := parseGlob(rest)
	if err != nil {
		return scope{}, fmt.Errorf("scope %q: %w", s, err)
	}
	return scope{Raw: s, Op: scopeOp(op), Glob: g}, nil
}

// Grants reports whether the scope allows op on the cleaned absolute path p.
// A write scope grants read and write; a read scope grants read only.
func (s scope) Grants(op scopeOp, p string) bool {
	if op == opWrite && s.Op != opWrite {
		return false
	}
	return s.Glob.Match(p)
}

// glob is a parsed absolute path glob, the one glob dialect of seal
// clauses (seal.Glob, docs/design/scopes.md).
type glob = seal.Glob

// parseGlob parses an absolute path glob (seal.ParseGlob).
func parseGlob(s string) (glob, error) { return seal.ParseGlob(s) }

// cleanPath turns a path argument into the absolute clean path a scope glob
// is matched against. "file://" URIs are decoded; "." and ".." elements are
// resolved lexically, so "/data/../etc/passwd" becomes "/etc/passwd". A
// relative path, an empty path, a path with a NUL byte or a URI of another
// scheme cannot be placed and is returned with ok=false and the reason.
func cleanPath(arg string) (clean string, ok bool, reason string) {
	p := arg
	if strings.HasPrefix(strings.ToLower(p), "file:") {
		u, err := url.Parse(p)
		if err != nil {
			return "", false, fmt.Sprintf("malformed file URI: %v", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", false, fmt.Sprintf("file URI names host %q", u.Host)
		}
		p = u.Path
	} else if i := strings.Index(p, "://"); i > 0 && !strings.Contains(p[:i], "/") {
		return "", false, fmt.Sprintf("URI scheme %q is not a local path", p[:i])
	}
	switch {
	case p == "":
		return "", false, "empty path"
	case strings.ContainsRune(p, 0):
		return "", false, "path contains a NUL byte"
	case strings.HasPrefix(p, "~"):
		return "", false, "path starts with ~ (home directory unknown to the witness)"
	case !strings.HasPrefix(p, "/"):
		return "", false, "relative path (the server's working directory is unknown to the witness)"
	}
	return path.Clean(p), true, ""
}

// pathKeys are argument keys whose string values are paths, in lower case:
// keys match case-insensitively, because a server that decodes names
// case-insensitively (encoding/json into a struct) reads "Path" as "path".
var pathKeys = map[string]bool{
	"path": true, "file": true, "filename": true, "file_path": true, "filepath": true,
	"target": true, "source": true, "src": true, "destination": true, "dest": true, "dst": true,
	"dir": true, "directory": true, "folder": true, "root": true, "uri": true, "url": true,
	"old_path": true, "new_path": true, "from": true, "to": true,
}

// pathListKeys are argument keys whose values are arrays of paths, in lower
// case like pathKeys.
var pathListKeys = map[string]bool{
	"paths": true, "files": true, "sources": true, "targets": true, "uris": true, "directories": true,
}

// PathArg is one path found in a tool call's arguments.
type PathArg struct {
	Key   string // the argument key, with an index for arrays: "paths[1]"
	Value string // the value as given
}

// PathArgs returns the path arguments of a tool call's argument object, in
// key order (then array order), so the result is deterministic. Only
// top-level keys count: the keys in pathKeys and pathListKeys, and keys that
// end in "_path", "Path", "_file" or "_dir". For "uri", "url" and "uris" only
// file: URIs are paths. Values that are not strings are ignored.
func PathArgs(args map[string]any) []PathArg {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []PathArg
	for _, k := range keys {
		v := args[k]
		switch {
		case pathListKeys[strings.ToLower(k)]:
			list, ok := v.([]any)
			if !ok {
				if s, ok := v.(string); ok && isPathValue(k, s) {
					out = append(out, PathArg{Key: k, Value: s})
				}
				continue
			}
			for i, item := range list {
				if s, ok := item.(string); ok && isPathValue(k, s) {
					out = append(out, PathArg{Key: fmt.Sprintf("%s[%d]", k, i), Value: s})
				}
			}
		case isPathKey(k):
			if s, ok := v.(string); ok && isPathValue(k, s) {
				out = append(out, PathArg{Key: k, Value: s})
			}
		}
	}
	return out
}

func isPathKey(k string) bool {
	if pathKeys[strings.ToLower(k)] {
		return true
	}
	for _, suf := range []string{"_path", "Path", "_file", "_dir"} {
		if strings.HasSuffix(k, suf) && len(k) > len(suf) {
			return true
		}
	}
	return false
}

func isPathValue(key, v string) bool {
	switch strings.ToLower(key) {
	case "uri", "url", "uris":
		return strings.HasPrefix(strings.ToLower(v), "file:")
	}
	return true
}
