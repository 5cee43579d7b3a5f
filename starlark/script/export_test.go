package script

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestExport: a script's dtrace.export gives metrics read from the
// kernel's aggregations.
func TestExport(t *testing.T) {
	bpftest.Require(t)
	var out, errb bytes.Buffer
	r := New(Options{Stdout: &out, Stderr: &errb})
	defer r.Close()
	src := `
s = dtrace.session(quiet=True)
s.attach('BEGIN { @c["a b"] = count(); @c["a b"] = count(); @c["z"] = count(); @q = quantize(5); @q = quantize(100, 2); @m = max(7); }')
dtrace.export(s, "@c", name="begins_total", help="BEGIN firings.", labels=["what"])
dtrace.export(s, "@q", name="vals", help="Values.")
dtrace.export(s, "@m", name="biggest", help="Largest.")
`
	if err := r.ExecFile("export.star", src); err != nil {
		var b bytes.Buffer
		PrintError(&b, err)
		t.Fatalf("%s%s", b.String(), errb.String())
	}
	want := `# HELP begins_total BEGIN firings.
# TYPE begins_total counter
begins_total{what="a b"} 2
begins_total{what="z"} 1
# HELP biggest Largest.
# TYPE biggest gauge
biggest 7
# HELP vals Values.
# TYPE vals histogram
vals_bucket{le="3"} 0
vals_bucket{le="7"} 1
vals_bucket{le="15"} 1
vals_bucket{le="31"} 1
vals_bucket{le="63"} 1
vals_bucket{le="127"} 3
vals_bucket{le="+Inf"} 3
vals_sum 205
vals_count 3
`
	if err := testutil.CollectAndCompare(r.Metrics(), strings.NewReader(want), "begins_total", "vals", "biggest"); err != nil {
		t.Error(err)
	}
}

// TestExportErrors: what cannot be exported is refused when the script
// exports it, naming the script's line.
func TestExportErrors(t *testing.T) {
	bpftest.Require(t)
	for _, c := range []struct{ call, want string }{
		{`dtrace.export(s, "@st", name="st", labels=["k"])`, "key 1 of @st is a stack"},
		{`dtrace.export(s, "@nope", name="x")`, "no program of the session has aggregation @nope"},
		{`dtrace.export(s, "@c", name="x")`, "@c has 1 key(s), but 0 label name(s) were given"},
		{`dtrace.export(s, "c", name="x")`, `aggregation "c": want its name with '@'`},
		{`dtrace.export(s, "@c", name="x-y", labels=["k"])`, `"x-y" is not a valid metric name`},
		{"dtrace.export(s, \"@c\", name=\"x\", labels=[\"k\"])\ndtrace.export(s, \"@c\", name=\"x\", labels=[\"k\"])", `metric "x" is exported twice`},
	} {
		var out, errb bytes.Buffer
		r := New(Options{Stdout: &out, Stderr: &errb})
		src := "s = dtrace.session(quiet=True)\ns.attach('BEGIN { @c[1] = count(); @st[stack()] = count(); }')\n" + c.call + "\n"
		err := r.ExecFile("bad.star", src)
		r.Close()
		var b bytes.Buffer
		if err != nil {
			PrintError(&b, err)
		}
		if err == nil || !strings.Contains(b.String(), c.want) || !strings.Contains(b.String(), "bad.star:") {
			t.Errorf("%s: error %q, want one naming bad.star and saying %q", c.call, b.String(), c.want)
		}
	}
}
