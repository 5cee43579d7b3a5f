// Package bpftest decides what a test that needs BPF does when it cannot
// have it: skip with a reason, or — when DSTAR_REQUIRE_BPF=1, as in CI —
// fail, so that a run can never pass by skipping.
package bpftest

import (
	"os"
	"testing"
)

// EnvRequire is the environment variable that turns skips into failures.
const EnvRequire = "DSTAR_REQUIRE_BPF"

// Required reports whether BPF tests must run (DSTAR_REQUIRE_BPF=1).
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Require skips t unless the process can use BPF (runs as root). With
// DSTAR_REQUIRE_BPF=1 it fails t instead of skipping.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root to load BPF programs")
	}
}

// Skip skips t with reason — or fails it with DSTAR_REQUIRE_BPF=1. Use it
// when the kernel lacks a feature a test needs.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s (and %s=1 forbids skipping)", reason, EnvRequire)
	}
	t.Skip(reason)
}
