package dcompiler_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestVerifierAccepts compiles programs covering the language slice and
// loads them, so that the kernel's verifier judges the generated code.
func TestVerifierAccepts(t *testing.T) {
	bpftest.Require(t)
	progs := []string{
		`BEGIN { printf("hello, world\n"); exit(0); }`,
		`BEGIN { x = 1 + 2 * 3; y = x / 2; z = x % 4; trace(x << 2 | y ^ z); }`,
		`BEGIN { a = -7; b = 2; printf("%d %d %d\n", a / b, a % b, a > b ? a : b); }`,
		`syscall::openat:entry /pid == 1/ { @[execname] = count(); }`,
		`syscall::read:entry { @bytes[execname, pid] = sum(arg2); }`,
		`syscall::openat:entry { printf("%s %s\n", execname, copyinstr(arg1)); }`,
		`syscall::openat:return /errno != 0/ { @[probefunc, errno] = count(); }`,
		`sdt:sched::sched_process_exec { printf("%s %d\n", args->filename, args->pid); }`,
		`profile-997 { @[cpu] = count(); } tick-1s { printf("%d %d %d\n", timestamp, walltimestamp, vtimestamp); }`,
		`BEGIN { printf("%s %s %d %d %d %d\n", probeprov, probename, ppid, uid, gid, tid); }`,
		`syscall::write:entry /execname == "bash" && arg0 == 1/ { trace(arg2); }`,
		`BEGIN /"abc" < "abd"/ { s = execname; printf("%s\n", s); }`,
		`BEGIN { @ = count(); @s = sum(5); } END { exit(0); }`,
		`syscall::getpid:entry {}`,
		`syscall::read:entry { self->ts = timestamp; self->n++; } syscall::read:return /self->ts/ { @[execname] = sum(timestamp - self->ts); self->ts = 0; }`,
		`syscall::openat:entry { this->p = copyinstr(arg1); paths[pid, this->p] = 1; names[tid] = execname; } syscall::openat:return /paths[pid, "x"] == 0/ { printf("%s\\n", names[tid]); names[tid] = ""; counts[execname]++; counts[execname] += 2; }`,
	}
	for _, src := range progs {
		t.Run(src, func(t *testing.T) {
			f := source.NewFile("test.d", src)
			p, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{Providers: providers.Default()})
			if err != nil {
				if se, ok := err.(*source.Error); ok {
					t.Fatalf("compile: %v\n%s", err, se.Excerpt())
				}
				t.Fatalf("compile: %v", err)
			}
			spec := &ebpf.CollectionSpec{Maps: p.Code.Maps, Programs: map[string]*ebpf.ProgramSpec{}}
			for _, pr := range p.Code.Programs {
				spec.Programs[pr.Spec.Name] = pr.Spec
			}
			coll, err := ebpf.NewCollection(spec)
			if err != nil {
				t.Fatalf("load: %+v", err)
			}
			coll.Close()
		})
	}
}
