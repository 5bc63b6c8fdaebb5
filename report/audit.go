package report

import (
	"os"
	"path/filepath"

	"github.com/agent-trace-witness/witness/firewall"
	"github.com/agent-trace-witness/witness/internal/exitcode"
)

const maxAuditChecks = 1000

// auditChecks verifies a firewall audit snapshot (firewall's own audit
// verification, as `witness firewall audit verify` does) and keeps its
// check records, the first maxAuditChecks of them. An incomplete or
// tampered snapshot is shown with its verdict; an unreadable one is an
// error.
func auditChecks(path string, opts firewall.AuditVerifyOptions) (*Firewall, error) {
	fw := &Firewall{}
	opts.RequireSignature = false
	opts.Each = func(l firewall.AuditLine) error {
		var err error
		r := l.Reader(&err)
		if r.String("type", false) != "check" {
			return nil
		}
		if len(fw.Checks) >= maxAuditChecks {
			fw.More++
			return nil
		}
		c := AuditCheck{Seq: r.Int("sequence", false), ID: r.String("checkId", false), Direction: r.String("direction", false),
			Operation: r.String("operation", false), Disposition: r.String("disposition", false)}
		if j := r.Object("judgment", false); j != nil {
			c.Reason = j.String("reason", false)
		}
		fw.Checks = append(fw.Checks, c)
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Input("read audit", err, "check the path given to --firewall-audit")
	}
	defer f.Close()
	// the page names the file, never the machine's path to it
	v, err := firewall.VerifyAuditWith(f, filepath.Base(path), opts)
	if err != nil {
		return nil, err
	}
	fw.File = v.File
	fw.Verdict = v.String()
	fw.Auth = v.AuthString()
	fw.Complete = v.Complete
	return fw, nil
}
