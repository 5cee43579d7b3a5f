package flamegraph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// svgDoc is what the tests read back from WriteSVG's output.
type svgDoc struct {
	Width  int        `xml:"width,attr"`
	Total  uint64     `xml:"data-total,attr"`
	PlotW  float64    `xml:"data-w,attr"`
	Frames []svgFrame `xml:"g>g"`
	Texts  []string   `xml:"text"`
	Script string     `xml:"script"`
}

type svgFrame struct {
	S     uint64 `xml:"data-s,attr"`
	N     uint64 `xml:"data-n,attr"`
	D     int    `xml:"data-d,attr"`
	Title string `xml:"title"`
	Rect  struct {
		X     float64 `xml:"x,attr"`
		Y     float64 `xml:"y,attr"`
		Width float64 `xml:"width,attr"`
		Fill  string  `xml:"fill,attr"`
	} `xml:"rect"`
	Label string `xml:"text"`
}

func renderSVG(t testing.TB, stacks []Stack, opts Options) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := WriteSVG(&out, stacks, opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// parseSVG decodes svg strictly — a malformed document is a failure.
func parseSVG(t testing.TB, svg []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(svg))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	// Decode stops at the root's end; read on to be sure nothing is left.
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML after its root: %v", err)
		}
	}
	return doc
}

func frameNamed(t testing.TB, doc svgDoc, name string) svgFrame {
	t.Helper()
	for _, f := range doc.Frames {
		if f.Title[:strings.LastIndex(f.Title, " (")] == name {
			return f
		}
	}
	t.Fatalf("no frame named %q", name)
	return svgFrame{}
}

func TestSVGEscapes(t *testing.T) {
	nasty := `operator<<&"x"`
	stacks := []Stack{
		{[]string{"main", nasty}, 10},
		{[]string{"main", "Map[K comparable, V any].Get", "it's"}, 5},
		{[]string{"main", "bad\x00byte\xff]]>"}, 5},
	}
	svg := renderSVG(t, stacks, Options{Title: `<Title & "co">`, Subtitle: "a < b"})
	doc := parseSVG(t, svg)
	if got := frameNamed(t, doc, nasty); got.Label != nasty {
		t.Errorf("label of %q is %q", nasty, got.Label)
	}
	frameNamed(t, doc, "it's")
	frameNamed(t, doc, "bad\uFFFDbyte\uFFFD]]>")
	if doc.Texts[0] != `<Title & "co">` || doc.Texts[1] != "a < b" {
		t.Errorf("title and subtitle read back as %q", doc.Texts[:2])
	}
	if !strings.Contains(doc.Script, "window.flamegraph") {
		t.Errorf("the script did not survive as CDATA: %.100q", doc.Script)
	}
}

func TestScriptCannotEndCDATA(t *testing.T) {
	if strings.Contains(script, "]]>") {
		t.Fatal("flamegraph.js holds ]]>, which would end its CDATA section")
	}
}

// Each frame's width is its share of all samples, and it starts where its
// parent's earlier children end.
func TestSVGWidthsAreProportional(t *testing.T) {
	stacks := []Stack{
		{[]string{"a", "b", "c"}, 30},
		{[]string{"a", "b"}, 10},
		{[]string{"a", "d"}, 20},
		{[]string{"e"}, 40},
		{[]string{"a", "b", "f"}, 1},
		{[]string{"e", "tiny"}, 0}, // no samples: not drawn
	}
	doc := parseSVG(t, renderSVG(t, stacks, Options{Width: 1000}))
	if doc.Total != 101 || doc.PlotW != 980 {
		t.Fatalf("total %d, plot width %v; want 101 and 980", doc.Total, doc.PlotW)
	}
	want := map[string]struct {
		start, count uint64
		depth        int
	}{
		"all": {0, 101, 0}, "a": {0, 61, 1}, "b": {0, 41, 2}, "c": {10, 30, 3},
		"f": {40, 1, 3}, "d": {41, 20, 2}, "e": {61, 40, 1},
	}
	if len(doc.Frames) != len(want) {
		t.Errorf("%d frames drawn, want %d", len(doc.Frames), len(want))
	}
	for name, w := range want {
		f := frameNamed(t, doc, name)
		wantX := 10 + float64(w.start)/101*980
		wantW := float64(w.count) / 101 * 980
		if f.S != w.start || f.N != w.count || f.D != w.depth ||
			math.Abs(f.Rect.X-wantX) > 0.006 || math.Abs(f.Rect.Width-wantW) > 0.006 {
			t.Errorf("%s: start %d count %d depth %d x %v width %v; want %d %d %d %.2f %.2f",
				name, f.S, f.N, f.D, f.Rect.X, f.Rect.Width, w.start, w.count, w.depth, wantX, wantW)
		}
		// Depth 0 at the bottom, each row 16 pixels above its parent's.
		if r := frameNamed(t, doc, "all"); f.Rect.Y != r.Rect.Y-float64(16*w.depth) {
			t.Errorf("%s: y %v, root's %v", name, f.Rect.Y, r.Rect.Y)
		}
	}
	if f := frameNamed(t, doc, "f"); f.Label != "" {
		t.Errorf("a 9.7-pixel frame is labelled %q", f.Label)
	}
	if !strings.HasSuffix(frameNamed(t, doc, "c").Title, "(30 samples, 29.70%)") {
		t.Errorf("title %q", frameNamed(t, doc, "c").Title)
	}
}

func TestSVGDropsNarrowFramesButKeepsTotal(t *testing.T) {
	stacks := []Stack{{[]string{"big"}, 100000}, {[]string{"small"}, 99}, {[]string{"big", "small"}, 101}}
	doc := parseSVG(t, renderSVG(t, stacks, Options{}))
	if len(doc.Frames) != 3 || doc.Frames[0].N != 100200 {
		t.Errorf("frames %+v; want all, big and big;small, with all 100200 samples", doc.Frames)
	}
}

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    float64
		want string
	}{
		{"execute_command", 200, "execute_command"},
		{"execute_command", 6 + 15*charWidth, "execute_command"},
		{"execute_command", 6 + 14*charWidth, "execute_comm.."},
		{"execute_command", 6 + 3*charWidth, "e.."},
		{"execute_command", 6 + 2.9*charWidth, ""},
		{"ünïcödé_fünc", 6 + 5*charWidth, "ünï.."},
	} {
		if got := label(tc.name, tc.w); got != tc.want {
			t.Errorf("label(%q, %v) = %q, want %q", tc.name, tc.w, got, tc.want)
		}
	}
}

func TestColours(t *testing.T) {
	for _, name := range []string{"vmlinux`schedule", "do_idle_[k]", "genunix`cv_wait"} {
		if !isKernel(name) {
			t.Errorf("%s is not seen as kernel", name)
		}
	}
	for _, name := range []string{"main", "libc.so.6`malloc", "bash`main", "unixish"} {
		if isKernel(name) {
			t.Errorf("%s is seen as kernel", name)
		}
	}
	// User frames are warm (red dominant, blue least); kernel frames are
	// teal (blue and green above red).
	var r, g, b int
	for i := range 200 {
		fmt.Sscanf(string(appendColor(nil, fmt.Sprint("user", i))), "#%02x%02x%02x", &r, &g, &b)
		if !(r >= g && g >= b) {
			t.Errorf("user colour #%02x%02x%02x is not warm", r, g, b)
		}
		fmt.Sscanf(string(appendColor(nil, fmt.Sprint("vmlinux`k", i))), "#%02x%02x%02x", &r, &g, &b)
		if !(b > r && g > r) {
			t.Errorf("kernel colour #%02x%02x%02x is not teal", r, g, b)
		}
	}
	if string(appendColor(nil, "main")) != string(appendColor(nil, "main")) {
		t.Error("a name's colour changes")
	}
}

func TestSVGIsDeterministic(t *testing.T) {
	stacks := randomStacks(2000, 1)
	first := renderSVG(t, stacks, Options{Title: "t"})
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(stacks), func(i, j int) { stacks[i], stacks[j] = stacks[j], stacks[i] })
	if second := renderSVG(t, stacks, Options{Title: "t"}); !bytes.Equal(first, second) {
		t.Fatal("the same stacks in another order gave a different SVG")
	}
	parseSVG(t, first)
}

func TestSVGOfNothing(t *testing.T) {
	doc := parseSVG(t, renderSVG(t, nil, Options{}))
	if len(doc.Frames) != 1 || doc.Frames[0].Rect.Width != doc.PlotW {
		t.Errorf("an empty profile gave frames %+v", doc.Frames)
	}
}

// randomStacks makes n stacks, nearly all distinct, 5 to 40 frames deep,
// from 2000 function names and a tree-like call structure, as a big
// profile would have.
func randomStacks(n int, seed uint64) []Stack {
	rng := rand.New(rand.NewPCG(seed, 1))
	names := make([]string, 2000)
	for i := range names {
		names[i] = fmt.Sprintf("pkg%d.(*Type%d).Method%d", i%37, i%101, i)
	}
	stacks := make([]Stack, n)
	for i := range stacks {
		depth := 5 + rng.IntN(36)
		frames := make([]string, depth)
		// Skewed choices so that prefixes are shared, as in real stacks.
		for d := range frames {
			frames[d] = names[(d*53+int(rng.ExpFloat64()*float64(d+1)*3))%len(names)]
		}
		stacks[i] = Stack{Frames: frames, Count: 1 + uint64(rng.IntN(50))}
	}
	return stacks
}

func TestSVGOf100kStacksIsQuick(t *testing.T) {
	stacks := randomStacks(100_000, 2)
	start, cpu0 := time.Now(), cpuTime(t)
	svg := renderSVG(t, stacks, Options{})
	took, cpu := time.Since(start), cpuTime(t)-cpu0
	t.Logf("100k stacks: %v (%v of CPU), %d bytes", took, cpu, len(svg))
	// CPU time, not wall time: the machine is shared, and others' load
	// must not fail this. The benchmark gives the real figure.
	if cpu > time.Second {
		t.Errorf("100k stacks took %v of CPU", cpu)
	}
}

// cpuTime is the CPU time this process has used, in user and kernel mode.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkWriteSVG(b *testing.B) {
	stacks := randomStacks(100_000, 2)
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if err := WriteSVG(&out, stacks, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len()), "svg-bytes")
}
