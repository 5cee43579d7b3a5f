package providers

import (
	"strings"
	"testing"
)

func TestParseDesc(t *testing.T) {
	for in, want := range map[string]Desc{
		"BEGIN":                      {Name: "BEGIN"},
		"read:entry":                 {Function: "read", Name: "entry"},
		"vmlinux:read:entry":         {Module: "vmlinux", Function: "read", Name: "entry"},
		"syscall:vmlinux:read:entry": {"syscall", "vmlinux", "read", "entry"},
		"syscall:::":                 {Provider: "syscall"},
		":::":                        {},
		"":                           {},
		"  profile:::tick-1s ":       {Provider: "profile", Name: "tick-1s"},
		"sdt:sched::sched_switch":    {Provider: "sdt", Module: "sched", Name: "sched_switch"},
	} {
		got, err := ParseDesc(in)
		if err != nil || got != want {
			t.Errorf("ParseDesc(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	_, err := ParseDesc("a:b:c:d:e")
	if err == nil || !strings.Contains(err.Error(), "invalid probe description") {
		t.Errorf("five fields: %v", err)
	}
	if s := (Desc{"syscall", "", "read", "entry"}).String(); s != "syscall::read:entry" {
		t.Errorf("String() = %q", s)
	}
}

func TestMatches(t *testing.T) {
	p := &Probe{Provider: "syscall", Module: "vmlinux", Function: "read", Name: "entry"}
	for desc, want := range map[string]bool{
		"":                        true,
		"syscall:::":              true,
		"syscall::read:entry":     true,
		"sys*:::":                 true,
		"syscall::re?d:":          true,
		"syscall::r[a-f]ad:":      true,
		"syscall::[!x]ead:":       true,
		"syscall::[^r]ead:":       false,
		"entry":                   true,
		"return":                  false,
		"read:entry":              true,
		"write:entry":             false,
		"vmlinux::":               true, // module:function:name
		"syscall:vmlinux:*:entr*": true,
		"syscall:kernel::":        false,
		"profile:::":              false,
	} {
		d, err := ParseDesc(desc)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Matches(p); got != want {
			t.Errorf("%q (%+v) matches %v: %v, want %v", desc, d, p, got, want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "abc", true},
		{"a*c", "abc", true},
		{"a*c", "abd", false},
		{"*a*b*", "xaybz", true},
		{"*a*b", "xaybz", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"[abc]", "b", true},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[!a-c]", "d", true},
		{"[!a-c]", "a", false},
		{"[^a-c]", "a", false},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[a-]", "-", true},
		{"[", "[", true},
		{"[ab", "[ab", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`a\?`, "a?", true},
		{"sys_enter_*", "sys_enter_openat", true},
		{"sys_*_openat", "sys_exit_openat", true},
		{"profile-*", "tick-1s", false},
		{"**a", "a", true},
		{"*?", "", false},
	} {
		if got := globMatch(c.p, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("a*[b-c]?", "abbc")
	f.Fuzz(func(t *testing.T, p, s string) {
		globMatch(p, s) // must not panic or loop
		if !isGlob(p) && globMatch(p, s) != (p == s) {
			t.Errorf("literal %q vs %q", p, s)
		}
	})
}
