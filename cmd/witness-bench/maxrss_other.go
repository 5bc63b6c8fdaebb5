//go:build !unix

package main

// maxRSS returns -1: this system has no getrusage.
func maxRSS() int64 { return -1 }
