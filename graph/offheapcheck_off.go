//go:build !witness_offheapcheck

package graph

// faultAfterReleaseAll is StreamOptions.faultAfterRelease for every
// stream; on with the build tag witness_offheapcheck (tests: go test
// -tags witness_offheapcheck ./graph ./verify ./report).
const faultAfterReleaseAll = false
