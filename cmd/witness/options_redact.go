package main

import (
	"github.com/agent-trace-witness/witness/derive"
	"github.com/spf13/cobra"
)

// redactOptions is the redaction flag group (--redact, --redact-rules,
// --redact-key), declared once for every command that writes recorded
// values: capture, proxy, import and capture append.
type redactOptions struct {
	Rules     []string // --redact, one rule each
	RulesFile string   // --redact-rules
	KeyFile   string   // --redact-key
}

// AddFlags declares the group on c; effect says what redaction does for
// this command (appended to the --redact help, "" for nothing).
func (r *redactOptions) AddFlags(c *cobra.Command, effect string) {
	f := c.Flags()
	f.StringArrayVar(&r.Rules, "redact", nil, "redaction rule: a JSON path ($.arguments.token, $..password) or re:REGEXP"+effect+" (repeatable)")
	f.StringVar(&r.RulesFile, "redact-rules", "", "file of redaction rules, one a line")
	f.StringVar(&r.KeyFile, "redact-key", "", "file holding the redaction key in hex (default $"+derive.EnvRedactKey+")")
}

// Load builds the redactor the flags (and $WITNESS_REDACT_KEY) describe; nil
// when no rule is given.
func (r *redactOptions) Load(a *app) (*derive.Redactor, error) {
	return derive.LoadRedactor(derive.RedactOptions{Rules: r.Rules, RulesFile: r.RulesFile,
		KeyFile: r.KeyFile, KeyHex: a.getenv(derive.EnvRedactKey)})
}

// Key reads the redaction key alone (--redact-key, else
// $WITNESS_REDACT_KEY), with or without rules: nil when neither is set.
// The HTTP proxy hashes credential headers with it.
func (r *redactOptions) Key(a *app) ([]byte, error) {
	return derive.LoadRedactKey(derive.RedactOptions{KeyFile: r.KeyFile, KeyHex: a.getenv(derive.EnvRedactKey)})
}
