//go:build !linux

package etcdsem

// Tests start no processes but on Linux (process_test.go).

func killChildren() int { return 0 }

func watchParent() {}
