package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

// Shared by the key verbs (keygen, rotate-key, revoke-key, list-keys, key,
// cosign) and by seal and verify: where the keyring is and how to reach the
// OS keyring.

// envOSTimeout overrides the timeout around each OS keyring call.
const envOSTimeout = "WITNESS_OS_KEYRING_TIMEOUT"

func addKeyringFlag(c *cobra.Command, p *string) {
	c.Flags().StringVar(p, "keyring", "", "keyring file (default $WITNESS_KEYRING, else keys.json in the user config folder's witness/)")
}

// addLegacyOutFlag adds agent-trace-witness 0.1.0's spelling of the keyring
// path for the key verbs (`witness keygen -o keys.json`), hidden: --keyring
// is the documented flag.
func addLegacyOutFlag(c *cobra.Command, p *string) {
	c.Flags().StringVarP(p, "out", "o", "", "same as --keyring (agent-trace-witness 0.1.0 spelling)")
	c.Flags().MarkHidden("out")
}

// keyringPath resolves --keyring, then WITNESS_KEYRING, then the user
// config folder.
func (a *app) keyringPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return keyring.DefaultPath(a.getenv)
}

// activeSigner finds the key that signs new evidence (capture's session
// end, import, a firewall audit): the active key of --keyring, else of
// $WITNESS_KEYRING when that file exists; nil when there is neither
// (the evidence is then written unsigned).
func (a *app) activeSigner(flag string) (keyring.Signer, error) {
	path := flag
	if path == "" {
		path = a.getenv(keyring.EnvKeyring)
		if path == "" {
			return nil, nil
		}
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	kopts, err := a.keyringOptions("")
	if err != nil {
		return nil, err
	}
	k, err := keyring.OpenExisting(path, kopts)
	if err != nil {
		return nil, err
	}
	return k.ActiveSigner()
}

// keyringOptions builds keyring options from the environment.
func (a *app) keyringOptions(backend string) (keyring.Options, error) {
	o := keyring.Options{Backend: backend}
	if v := a.getenv(envOSTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, exitcode.New(exitcode.Usage, fmt.Errorf("%s=%q is not a positive duration", envOSTimeout, v), "use a Go duration such as 3s")
		}
		o.Timeout = d
	}
	return o, nil
}

func checkChoice(flag, v string, choices ...string) error {
	for _, c := range choices {
		if v == c {
			return nil
		}
	}
	return usageError(fmt.Errorf("--%s %q is not one of %v", flag, v, choices), fmt.Sprintf("use --%s %s", flag, choices[0]))
}
