package proxy

import (
	"time"

	"github.com/agent-trace-witness/witness/internal/proctree"
)

// groupAlive reports whether a process of the tree of the server whose
// session is pid is alive.
func groupAlive(pid int) bool { return proctree.Alive(pid) }

// waitGroupGone kills what is left of the tree of pid and waits up to d.
func waitGroupGone(pid int, d time.Duration) { proctree.End(pid, d) }
