package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestCommandLineOptions covers the dtrace(1) options the usage lists
// beyond -n/-s/-q: -b, -i, -S, -H, -X, -L, -64 and -32, -G, and the
// preprocessor's -x define, undef and incdir.
func TestCommandLineOptions(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := func(t *testing.T, r result, stdout string) {
		t.Helper()
		if r.code != 0 || r.stdout != stdout {
			t.Errorf("exit %d, stdout %q, want %q\nstderr:\n%s", r.code, r.stdout, stdout, r.stderr)
		}
	}
	fails := func(t *testing.T, r result, code int, stderr string) {
		t.Helper()
		if r.code != code || !strings.HasPrefix(r.stderr, stderr) {
			t.Errorf("exit %d, stderr %q, want %d and %q", r.code, r.stderr, code, stderr)
		}
	}

	t.Run("b", func(t *testing.T) {
		ok(t, dstar(t, 20*time.Second, "-b", "64k", "-64", "-qn", `BEGIN { printf("b"); exit(0); }`), "b\n")
		fails(t, dstar(t, 20*time.Second, "-b", "lots", "-n", "BEGIN"), 1, "dstar: failed to set -x bufsize: Invalid value for specified option\n")
	})
	t.Run("i", func(t *testing.T) {
		// Probe 1 is BEGIN and 2 END, as dstar -l numbers them.
		ok(t, dstar(t, 20*time.Second, "-q", "-i", `1 { printf("%s ", probename); exit(0); }`, "-i", `2 { printf("%s", probename); }`), "BEGIN END\n")
		r := dstar(t, 20*time.Second, "-l", "-i", "2")
		if want := "    2     dtrace"; r.code != 0 || !strings.Contains(r.stdout, want) || strings.Count(r.stdout, "\n") != 2 {
			t.Errorf("-l -i 2: exit %d, stdout %q", r.code, r.stdout)
		}
		fails(t, dstar(t, 20*time.Second, "-i", "99999999"), 1, "dstar: invalid probe specifier 99999999: invalid probe identifier 99999999\n")
	})
	t.Run("S", func(t *testing.T) {
		r := dstar(t, 20*time.Second, "-S", "-e", "-n", "syscall::getpid:entry { @ = count(); }")
		if r.code != 0 || !strings.Contains(r.stderr, "BPF program ") || !strings.Contains(r.stderr, "for syscall:vmlinux:getpid:entry") ||
			!strings.Contains(r.stderr, "Call FnMapLookupElem") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("e", func(t *testing.T) {
		// Compiled, not enabled: dtrace reports no matches.
		r := dstar(t, 20*time.Second, "-e", "-n", "BEGIN { trace(1); }")
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("H", func(t *testing.T) {
		inc := filepath.Join(dir, "inc")
		os.Mkdir(inc, 0o755)
		os.WriteFile(filepath.Join(inc, "inner.h"), []byte("#define INNER 2\n"), 0o644)
		os.WriteFile(filepath.Join(inc, "outer.h"), []byte("#include <inner.h>\n#define OUTER (INNER + 1)\n"), 0o644)
		script := write("h.d", "#include \"inc/outer.h\"\nBEGIN { printf(\"%d\", OUTER); exit(0); }\n")
		r := dstar(t, 20*time.Second, "-C", "-H", "-I", inc, "-qs", script)
		ok(t, r, "3\n")
		want := ". " + filepath.Join(dir, "inc/outer.h") + "\n.. " + filepath.Join(inc, "inner.h") + "\n"
		if r.stderr != want {
			t.Errorf("stderr %q, want %q", r.stderr, want)
		}
	})
	t.Run("X", func(t *testing.T) {
		script := write("x.d", "#ifdef __STDC__\nBEGIN { printf(\"%d\", __STDC__); exit(0); }\n#else\nBEGIN { printf(\"none\"); exit(0); }\n#endif\n")
		for mode, want := range map[string]string{"a": "0\n", "c": "1\n", "s": "none\n", "t": "0\n"} {
			ok(t, dstar(t, 20*time.Second, "-C", "-X", mode, "-qs", script), want)
		}
		ok(t, dstar(t, 20*time.Second, "-C", "-qs", script), "0\n")
		fails(t, dstar(t, 20*time.Second, "-C", "-X", "q", "-qs", script), 1, "dstar: failed to set -x stdc: Invalid value for specified option\n")
	})
	t.Run("x define", func(t *testing.T) {
		script := write("d.d", "#ifdef GONE\nBEGIN { exit(1); }\n#endif\n#include <inner.h>\nBEGIN { printf(\"%d %d\", N, INNER); exit(0); }\n")
		ok(t, dstar(t, 20*time.Second, "-C", "-x", "define=N=7", "-D", "GONE", "-x", "undef=GONE", "-x", "incdir="+filepath.Join(dir, "inc"), "-qs", script), "7 2\n")
	})
	t.Run("L", func(t *testing.T) {
		lib := filepath.Join(dir, "lib")
		os.Mkdir(lib, 0o755)
		os.WriteFile(filepath.Join(lib, "a.d"), []byte("inline int answer = 42;\n"), 0o644)
		os.WriteFile(filepath.Join(lib, "b.d"), []byte("typedef struct pair { int a; int b; } pair_t;\n"), 0o644)
		os.WriteFile(filepath.Join(lib, "notes.txt"), []byte("not D\n"), 0o644)
		ok(t, dstar(t, 20*time.Second, "-L", lib, "-qn", `BEGIN { printf("%d %d", answer, sizeof (pair_t)); exit(0); }`), "42 8\n")
		ok(t, dstar(t, 20*time.Second, "-x", "libdir="+lib, "-qn", `BEGIN { printf("%d", answer); exit(0); }`), "42\n")
		fails(t, dstar(t, 20*time.Second, "-L", filepath.Join(dir, "nosuch"), "-n", "BEGIN"), 1, "dstar: failed to compile: failed to open library directory ")
		os.WriteFile(filepath.Join(lib, "c.d"), []byte("inline int broken = ;\n"), 0o644)
		fails(t, dstar(t, 20*time.Second, "-L", lib, "-n", "BEGIN"), 1, "dstar: failed to compile script "+filepath.Join(lib, "c.d")+": line 1: syntax error")
	})
	t.Run("32 and G", func(t *testing.T) {
		fails(t, dstar(t, 20*time.Second, "-32", "-n", "BEGIN"), 1, "dstar: -32 is not supported")
		fails(t, dstar(t, 20*time.Second, "-G", "-s", "x.d"), 1, "dstar: -G is not supported")
	})
}
