package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// TestFindKeys runs the one key discovery for each way commands use keys
// against each place a keyring can be (or not be), and checks which key
// was found: the rules of docs/formats/keys.md, "Where the keyring is".
func TestFindKeys(t *testing.T) {
	dir := t.TempDir()
	named := filepath.Join(dir, "named.json")
	envKR := filepath.Join(dir, "env.json")
	home := filepath.Join(dir, "home")
	userKR := filepath.Join(home, ".config", "witness", "keys.json")
	ids := map[string]string{}
	for name, p := range map[string]string{"named": named, "env": envKR, "user": userKR} {
		e, err := keyring.Generate(p, keyring.Options{}, keyring.AlgHMAC)
		if err != nil {
			t.Fatal(err)
		}
		ids[e.KeyID] = name
	}
	missing := filepath.Join(dir, "missing.json")
	legacyHex := strings.Repeat("ab", 32)

	uses := map[string]keyUse{
		"seal":      {Required: true, Legacy: true, KeyID: true},
		"cosign":    {Required: true, KeyID: true},
		"key verb":  {Required: true},
		"verify":    {Legacy: true, Trust: true},
		"recording": recordingKeys,
	}
	// where: the --keyring value, $WITNESS_KEYRING, whether the user
	// default exists (HOME), and ATW_WITNESS_KEY.
	type where struct {
		flag, env string
		home      bool
		legacy    bool
	}
	situations := map[string]where{
		"--keyring":                       {flag: named, env: envKR, home: true},
		"--keyring missing":               {flag: missing, env: envKR, home: true, legacy: true},
		"$WITNESS_KEYRING":                {env: envKR, home: true},
		"$WITNESS_KEYRING missing":        {env: missing, home: true},
		"$WITNESS_KEYRING missing, 0.1.0": {env: missing, home: true, legacy: true},
		"user default":                    {home: true},
		"nothing":                         {},
		"nothing, 0.1.0":                  {legacy: true},
	}
	// want: for each use and situation, the signer found ("named", "env",
	// "user", "legacy", "none") or "error: <text>".
	want := map[string]map[string]string{
		"seal": {
			"--keyring": "named", "--keyring missing": "error: keyring not found",
			"$WITNESS_KEYRING": "env", "$WITNESS_KEYRING missing": "error: no signing key",
			"$WITNESS_KEYRING missing, 0.1.0": "legacy", "user default": "user",
			"nothing": "error: cannot locate the keyring", "nothing, 0.1.0": "legacy",
		},
		"cosign": {
			"--keyring": "named", "--keyring missing": "error: keyring not found",
			"$WITNESS_KEYRING": "env", "$WITNESS_KEYRING missing": "error: keyring not found",
			"$WITNESS_KEYRING missing, 0.1.0": "error: keyring not found", "user default": "user",
			"nothing": "error: cannot locate the keyring", "nothing, 0.1.0": "error: cannot locate the keyring",
		},
		"key verb": {
			"--keyring": "named", "--keyring missing": "error: keyring not found",
			"$WITNESS_KEYRING": "env", "$WITNESS_KEYRING missing": "error: keyring not found",
			"$WITNESS_KEYRING missing, 0.1.0": "error: keyring not found", "user default": "user",
			"nothing": "error: cannot locate the keyring", "nothing, 0.1.0": "error: cannot locate the keyring",
		},
		"verify": {
			"--keyring": "named", "--keyring missing": "error: keyring not found",
			"$WITNESS_KEYRING": "env", "$WITNESS_KEYRING missing": "none",
			"$WITNESS_KEYRING missing, 0.1.0": "legacy", "user default": "user",
			"nothing": "none", "nothing, 0.1.0": "legacy",
		},
		"recording": {
			"--keyring": "named", "--keyring missing": "error: keyring not found",
			"$WITNESS_KEYRING": "env", "$WITNESS_KEYRING missing": "none",
			"$WITNESS_KEYRING missing, 0.1.0": "none", "user default": "user",
			"nothing": "none", "nothing, 0.1.0": "none",
		},
	}
	for uname, use := range uses {
		for sname, w := range situations {
			t.Run(uname+"/"+sname, func(t *testing.T) {
				env := map[string]string{}
				if w.env != "" {
					env[keyring.EnvKeyring] = w.env
				}
				if w.home {
					env["HOME"] = home
				}
				if w.legacy {
					env[keyring.LegacyEnv] = legacyHex
				}
				a := newApp(strings.NewReader(""), io.Discard, io.Discard, func(k string) string { return env[k] })
				k := &keyringOptions{Keyring: w.flag, use: use}
				got := ""
				if use.Legacy && !use.Required {
					// a verifier: which keyring, else the 0.1.0 key
					vo, err := k.VerifyKeys(a, 0)
					switch {
					case err != nil:
						got = "error: " + err.Error()
					case vo.Keyring != nil:
						e, _ := vo.Keyring.Active()
						got = ids[e.KeyID]
					case vo.LegacyKeyHex != "":
						got = "legacy"
					default:
						got = "none"
					}
				} else if uname == "key verb" {
					found, err := k.Open(a, "")
					if err != nil {
						got = "error: " + err.Error()
					} else {
						e, _ := found.Keyring.Active()
						got = ids[e.KeyID]
					}
				} else {
					s, _, err := k.Signer(a)
					switch {
					case err != nil:
						got = "error: " + err.Error()
					case s == nil:
						got = "none"
					case s.KeyID() == "":
						got = "legacy"
					default:
						got = ids[s.KeyID()]
					}
				}
				exp := want[uname][sname]
				if strings.HasPrefix(exp, "error: ") {
					if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, strings.TrimPrefix(exp, "error: ")) {
						t.Fatalf("got %q, want %q", got, exp)
					}
					return
				}
				if got != exp {
					t.Fatalf("got %q, want %q", got, exp)
				}
			})
		}
	}
}

// TestFindKeysErrorsAreUsage: every discovery failure is a usage error
// (exit 2) with a hint.
func TestFindKeysErrorsAreUsage(t *testing.T) {
	env := map[string]string{}
	a := newApp(strings.NewReader(""), io.Discard, io.Discard, func(k string) string { return env[k] })
	for _, k := range []*keyringOptions{
		{Keyring: filepath.Join(t.TempDir(), "missing.json"), use: recordingKeys},
		{use: keyUse{Required: true, Legacy: true}},
		{use: keyUse{Required: true}},
	} {
		_, _, err := k.Signer(a)
		if exitcode.Of(err) != exitcode.Usage || exitcode.HintOf(err) == "" {
			t.Errorf("%+v: %v (exit %v, hint %q), want a usage error with a hint", k.use, err, exitcode.Of(err), exitcode.HintOf(err))
		}
	}
	env[keyring.LegacyEnv] = strings.Repeat("ab", 32)
	k := &keyringOptions{KeyID: "k1", use: keyUse{Required: true, Legacy: true}}
	if _, _, err := k.Signer(a); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--key-id needs a keyring") {
		t.Errorf("--key-id with ATW_WITNESS_KEY: %v", err)
	}
}
