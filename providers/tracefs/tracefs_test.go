package tracefs

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"golang.org/x/sys/unix"
)

const execFormat = `name: sched_process_exec
ID: 365
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
	field:pid_t pid;	offset:12;	size:4;	signed:1;
	field:pid_t old_pid;	offset:16;	size:4;	signed:1;

print fmt: "filename=%s pid=%d old_pid=%d", __get_str(filename), REC->pid, REC->old_pid
`

func TestParseFormat(t *testing.T) {
	f, err := ParseFormat([]byte(execFormat))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "sched_process_exec" || f.ID != 365 || len(f.Fields) != 7 {
		t.Fatalf("got name %q id %d %d fields", f.Name, f.ID, len(f.Fields))
	}
	want := []Field{
		{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2, Common: true, ArrayLen: -1},
		{Name: "common_flags", Type: "unsigned char", Offset: 2, Size: 1, Common: true, ArrayLen: -1},
		{Name: "common_preempt_count", Type: "unsigned char", Offset: 3, Size: 1, Common: true, ArrayLen: -1},
		{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true, Common: true, ArrayLen: -1},
		{Name: "filename", Type: "char[]", Offset: 8, Size: 4, DataLoc: true, ArrayLen: -1},
		{Name: "pid", Type: "pid_t", Offset: 12, Size: 4, Signed: true, ArrayLen: -1},
		{Name: "old_pid", Type: "pid_t", Offset: 16, Size: 4, Signed: true, ArrayLen: -1},
	}
	for i, w := range want {
		if f.Fields[i] != w {
			t.Errorf("field %d:\n got %+v\nwant %+v", i, f.Fields[i], w)
		}
	}
}

func TestParseDecl(t *testing.T) {
	for _, c := range []struct {
		decl string
		want Field
	}{
		{"const char * filename", Field{Name: "filename", Type: "const char *", Pointer: true, ArrayLen: -1}},
		{"char comm[16]", Field{Name: "comm", Type: "char[16]", ArrayLen: 16}},
		{"u8 m[2][3]", Field{Name: "m", Type: "u8[2][3]", ArrayLen: 6}},
		{"char name[TASK_COMM_LEN]", Field{Name: "name", Type: "char[TASK_COMM_LEN]", ArrayLen: 0}},
		{"__rel_loc u8[] buf", Field{Name: "buf", Type: "u8[]", RelLoc: true, ArrayLen: -1}},
		{"struct sk_buff *skb", Field{Name: "skb", Type: "struct sk_buff *", Pointer: true, ArrayLen: -1}},
		{"unsigned long args[6]", Field{Name: "args", Type: "unsigned long[6]", ArrayLen: 6}},
	} {
		got := Field{ArrayLen: -1}
		if err := parseDecl(c.decl, &got); err != nil {
			t.Errorf("%q: %v", c.decl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q:\n got %+v\nwant %+v", c.decl, got, c.want)
		}
	}
	for _, bad := range []string{"int", "x]", "[3]"} {
		var f Field
		if err := parseDecl(bad, &f); err == nil {
			t.Errorf("%q: no error, got %+v", bad, f)
		}
	}
}

func TestParseEvents(t *testing.T) {
	evs := parseEvents([]byte("sched:sched_switch\nirq:irq_handler_entry\nbad\n:x\nsched:sched_process_exec"))
	want := []Event{{"irq", "irq_handler_entry"}, {"sched", "sched_process_exec"}, {"sched", "sched_switch"}}
	if len(evs) != len(want) {
		t.Fatalf("got %v", evs)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("got %v, want %v", evs, want)
		}
	}
}

// TestLive reads the real kernel's tracefs.
func TestLive(t *testing.T) {
	bpftest.Require(t)
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tracefs at %s", d)
	evs, err := Events()
	if err != nil {
		t.Fatal(err)
	}
	if !Loaded() {
		t.Error("Loaded() is false after Events")
	}
	found := map[Event]bool{}
	for _, e := range evs {
		found[e] = true
	}
	for _, e := range []Event{{"sched", "sched_process_exec"}, {"syscalls", "sys_enter_openat"}, {"raw_syscalls", "sys_enter"}} {
		if !found[e] {
			t.Errorf("event %v not listed (of %d)", e, len(evs))
		}
	}

	f, err := FormatOf("sched", "sched_process_exec")
	if err != nil {
		t.Fatal(err)
	}
	fn := field(f, "filename")
	if fn == nil || !fn.DataLoc || fn.Size != 4 || fn.Type != "char[]" {
		t.Errorf("sched_process_exec filename: %+v", fn)
	}
	if again, _ := FormatOf("sched", "sched_process_exec"); again != f {
		t.Error("format not cached")
	}

	f, err = FormatOf("sched", "sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	if c := field(f, "prev_comm"); c == nil || c.ArrayLen != 16 || c.Size != 16 || c.Type != "char[16]" {
		t.Errorf("sched_switch prev_comm: %+v", c)
	}

	f, err = FormatOf("syscalls", "sys_enter_openat")
	if err != nil {
		t.Fatal(err)
	}
	if p := field(f, "filename"); p == nil || !p.Pointer || p.Size != 8 {
		t.Errorf("sys_enter_openat filename: %+v", p)
	}
	many := evs[:min(len(evs), 200)]
	fs, err := FormatsOf(many)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range many {
		if f, err := FormatOf(e.Group, e.Name); err != nil || f != fs[i] || f.Name != e.Name {
			t.Fatalf("FormatsOf[%d] = %v, FormatOf(%v) = %v, %v", i, fs[i].Name, e, f.Name, err)
		}
	}
	if _, err := FormatsOf(append(many[:10:10], Event{"no_such_group", "x"})); err == nil {
		t.Error("FormatsOf: no error for a missing event")
	}
	if _, err := FormatOf("no_such_group", "no_such_event"); err == nil {
		t.Error("no error for a missing event")
	}
}

func field(f *Format, name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// TestMount unmounts tracefs in a private mount namespace (a child process,
// so the machine's mounts are untouched) and checks that Dir mounts it.
func TestMount(t *testing.T) {
	if os.Getenv("DSTAR_TRACEFS_MOUNT_CHILD") == "1" {
		for _, d := range []string{tracingDir, debugTracingDir} {
			for hasEvents(d) {
				if err := unix.Unmount(d, unix.MNT_DETACH); err != nil {
					t.Fatalf("unmount %s: %v", d, err)
				}
			}
		}
		t.Logf("tracefs unmounted")
		d, err := Dir()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Dir() = %s", d)
		if d != tracingDir || !hasEvents(d) {
			t.Fatalf("Dir() = %s; events present: %v", d, hasEvents(d))
		}
		return
	}
	bpftest.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMount$", "-test.v")
	cmd.Env = append(os.Environ(), "DSTAR_TRACEFS_MOUNT_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}
