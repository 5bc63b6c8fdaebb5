package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agent-trace-witness/witness/internal/exitcode"
	"github.com/agent-trace-witness/witness/keyring"
	"github.com/agent-trace-witness/witness/seal"
)

// verifyOptions are the flags of `witness verify`. The seal part (this
// file's first version) checks the seal's signatures; evidence flags
// (events, graph, report formats) are added beside these.
type verifyOptions struct {
	Seal    string
	Keyring string
	Trust   string
	Quorum  int
	JSON    bool
}

func newVerifyCmd(a *app) *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:   "verify",
		Short: "Verify a seal's signatures (and a k-of-n quorum of cosignatures)",
		Long: `verify checks the seal's signature and cosignatures over its canonical body.
HMAC signatures are checked with the keyring (a seal with key_id uses only
that key; one without tries every non-revoked key) or with ATW_WITNESS_KEY
for 0.1.0 seals; Ed25519 signatures with the keyring's or a trust file's
public keys. With --quorum K, at least K distinct trusted keys must have
signed the exact body.

It prints one line per signature and a verdict line. Exit codes: 0 verified,
1 quorum not met, 3 a signature does not verify, is by a revoked key, or
cannot be checked with the keys given (docs/exit-codes.md).`,
		Example: `  witness verify --seal seal.json
  ATW_WITNESS_KEY=$(printf '0%.0s' {1..64}) witness verify --seal seal_without_damaging_tool.json
  witness verify --seal seal.json --trust trust.json --quorum 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(a, o)
		},
	}
	c.Flags().StringVar(&o.Seal, "seal", "", "the signed seal")
	addKeyringFlag(c, &o.Keyring)
	c.Flags().StringVar(&o.Trust, "trust", "", "trust file of public keys (from 'witness key export-public')")
	c.Flags().IntVar(&o.Quorum, "quorum", 0, "require at least this many distinct trusted keys to have signed the body")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	c.MarkFlagRequired("seal")
	return c
}

func runVerify(a *app, o verifyOptions) error {
	return runVerifySeal(a, o)
}

// sealKeys gathers the keys to verify a seal with: the keyring (--keyring
// must exist; the default location is used when it exists), the trust
// file, and ATW_WITNESS_KEY.
func (a *app) sealKeys(keyringFlag, trustFile string, quorum int) (seal.VerifyOptions, error) {
	vo := seal.VerifyOptions{Quorum: quorum, LegacyKeyHex: a.getenv(keyring.LegacyEnv)}
	if quorum < 0 {
		return vo, usageError(fmt.Errorf("--quorum %d is negative", quorum), "use --quorum K with K >= 1")
	}
	opts, err := a.keyringOptions("")
	if err != nil {
		return vo, err
	}
	path, perr := a.keyringPath(keyringFlag)
	if perr == nil {
		k, err := keyring.Open(path, opts)
		if err != nil {
			return vo, err
		}
		switch {
		case k.Exists():
			vo.Keyring = k
		case keyringFlag != "":
			return vo, exitcode.New(exitcode.Usage, fmt.Errorf("keyring %s: %w", path, keyring.ErrNoKeyring), "check the --keyring path")
		}
	}
	if trustFile != "" {
		t, err := keyring.LoadTrust(trustFile)
		if err != nil {
			return vo, err
		}
		vo.Trust = t
	}
	return vo, nil
}

func runVerifySeal(a *app, o verifyOptions) error {
	s, err := seal.Load(o.Seal)
	if err != nil {
		return err
	}
	vo, err := a.sealKeys(o.Keyring, o.Trust, o.Quorum)
	if err != nil {
		return err
	}
	res, verr := seal.Verify(s, vo)
	if verr != nil && exitcode.Of(verr) == exitcode.Usage {
		return verr
	}
	if o.JSON {
		out := struct {
			Seal string `json:"seal"`
			*seal.Result
		}{o.Seal, res}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		printSealChecks(a, res)
	}
	// The verdict is on stdout; the error and its hint go to stderr.
	return verr
}

func printSealChecks(a *app, res *seal.Result) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, c := range res.Checks {
		key := c.KeyID
		if key == "" {
			key = "(no key_id)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s: %s\n", c.Which, c.Alg, key, c.Status, c.Detail)
	}
	tw.Flush()
	fmt.Fprintf(a.stdout, "verdict: %s: %s\n", res.Verdict, res.Reason)
}
