package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/atomicfile"
	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
)

type keyExportOptions struct {
	Keyring string
	Out     string
	Merge   bool
	Force   bool
}

func newKeyCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "key",
		Short: "Key material for others: export public keys as a trust file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(newKeyExportPublicCmd(a))
	return c
}

func newKeyExportPublicCmd(a *app) *cobra.Command {
	var o keyExportOptions
	c := &cobra.Command{
		Use:   "export-public",
		Short: "Write the keyring's Ed25519 public keys as a trust file (no secrets)",
		Long: `export-public writes a trust file (docs/formats/keys.md) holding the keyring's
Ed25519 public keys, with revocation times. Verifiers pass it to
'witness verify --trust'. With --merge, keys are added to an existing trust
file, so several witnesses can build one trust file for a quorum; --force
replaces it instead. --out is never the keyring itself.`,
		Example: `  witness key export-public --keyring ./alice.json --out trust.json
  witness key export-public --keyring ./bob.json --out trust.json --merge`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeyExportPublic(a, o)
		},
	}
	addKeyringFlag(c, &o.Keyring)
	c.Flags().StringVar(&o.Out, "out", "", "trust file to write (default: stdout)")
	c.Flags().BoolVar(&o.Merge, "merge", false, "add to the trust file --out if it exists instead of refusing to overwrite it")
	addForceFlag(c, &o.Force)
	return c
}

func runKeyExportPublic(a *app, o keyExportOptions) error {
	path, err := a.keyringPath(o.Keyring)
	if err != nil {
		return err
	}
	opts, err := a.keyringOptions("")
	if err != nil {
		return err
	}
	k, err := keyring.OpenExisting(path, opts)
	if err != nil {
		return err
	}
	t, err := k.ExportTrust()
	if err != nil {
		return err
	}
	if o.Out == "-" {
		o.Out = ""
	}
	if o.Merge && o.Force {
		return usageError(errors.New("--merge and --force exclude each other"), "--merge adds to the trust file, --force replaces it")
	}
	// --merge rewrites the trust file it reads on purpose (configuration,
	// like the keyring); the keyring itself is never an output. An existing
	// file is refused below unless --merge or --force.
	outOpts := a.outOptions("--out", true, path)
	if o.Out != "" {
		if err := atomicfile.Check(o.Out, outOpts); err != nil {
			return err
		}
		_, statErr := os.Stat(o.Out)
		exists := statErr == nil
		if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
			return exitcode.New(exitcode.Failure, statErr, "")
		}
		switch {
		case exists && o.Force:
			empty := &keyring.TrustSet{}
			if err := empty.Merge(t); err != nil {
				return err
			}
			t = empty
		case exists && o.Merge:
			old, err := keyring.LoadTrust(o.Out)
			if err != nil {
				return err
			}
			if err := old.Merge(t); err != nil {
				return err
			}
			t = old
		case exists:
			return usageError(errors.New("--out "+o.Out+": trust file exists"), "add --merge to add these keys to it, --force to replace it, or choose another --out")
		default:
			empty := &keyring.TrustSet{}
			if err := empty.Merge(t); err != nil {
				return err
			}
			t = empty
		}
	}
	b, err := t.Marshal()
	if err != nil {
		return err
	}
	if o.Out == "" {
		_, err = a.stdout.Write(b)
		return err
	}
	if err := atomicfile.Write(o.Out, b, outOpts); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %d public key(s) to %s\n", len(t.Keys), o.Out)
	return nil
}
