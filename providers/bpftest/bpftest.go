// Package bpftest decides what a test that needs BPF does when it cannot
// have it: skip with a reason, or — when DSTAR_REQUIRE_BPF=1, as in CI —
// fail, so that a run can never pass by skipping.
package bpftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// MainWithDstar is a TestMain for end-to-end tests: it builds the static
// dstar binary from pkg (a path to cmd/dstar) into a temporary directory,
// stores its path in *bin, runs the tests and exits with their status.
func MainWithDstar(m *testing.M, pkg string, bin *string) {
	dir, err := os.MkdirTemp("", "dstar-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "dstar")
	build := exec.Command("go", "build", "-o", *bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dstar: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
