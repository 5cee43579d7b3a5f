// Package bpftest decides what a test that needs BPF does when it cannot
// have it: skip with a reason, or — when DSTAR_REQUIRE_BPF=1, as in CI —
// fail, so that a run can never pass by skipping.
package bpftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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

// BuildC compiles the C program src with gcc and flags into dir/name and
// returns its path. Without gcc the test skips — or fails with
// DSTAR_REQUIRE_BPF=1 (.ci/run installs gcc).
func BuildC(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	return BuildCFiles(t, dir, name, map[string]string{name + ".c": src}, flags...)
}

// BuildCFiles writes the files srcs (name → text) to dir and runs gcc, in
// dir, on its .c files with flags, into dir/out, whose path it returns.
// The flags follow the sources, so that libraries (-lfoo) are linked
// after the code that needs them. Without gcc the test skips as BuildC's.
func BuildCFiles(t testing.TB, dir, out string, srcs map[string]string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		Skip(t, "gcc is not installed: it builds the programs user-space probes are tested on (apt-get install gcc)")
	}
	var files []string
	for name, text := range srcs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".c") {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	cmd := exec.Command(gcc, append(append(files, flags...), "-o", out)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	return filepath.Join(dir, out)
}

// BuildCXX compiles the C++ program src with g++ and flags into
// dir/name and returns its path. Without g++ the test skips — or fails
// with DSTAR_REQUIRE_BPF=1 (.ci/run installs g++).
func BuildCXX(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		Skip(t, "g++ is not installed: it builds the C++ programs user stacks are tested on (apt-get install g++)")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".cc"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gxx, append(append([]string{name + ".cc"}, flags...), "-o", name)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++ %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	return filepath.Join(dir, name)
}

// BuildGo builds the Go program src (one main package, no dependencies)
// with the go command and flags into dir/name and returns its path.
func BuildGo(t testing.TB, dir, name, src string, flags ...string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		Skip(t, "the go command is not in PATH")
	}
	pkg := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "go.mod"), []byte("module example.com/"+name+"\n\ngo 1.21\n"), 0o644)
	if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append(append([]string{"build"}, flags...), "-o", out, ".")
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	return out
}
