package main

import (
	"os"
	"testing"
)

// TestUpToDate fails when syscalls.star is not what the generator makes
// from today's sysnum tables: run go generate ./stdlib.
func TestUpToDate(t *testing.T) {
	want, err := generate("../../../providers/sysnum")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../syscalls.star")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("stdlib/syscalls.star is stale: run go generate ./stdlib")
	}
}
