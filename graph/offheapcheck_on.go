//go:build witness_offheapcheck

package graph

// faultAfterReleaseAll: every stream makes its run memory inaccessible
// when it ends, so a late access faults (see offheapcheck_off.go).
const faultAfterReleaseAll = true
