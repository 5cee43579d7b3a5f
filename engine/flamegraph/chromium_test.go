package flamegraph

// Browser tests: the SVG as headless Chromium renders and runs it.

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// writeSample renders testdata/sample.folded to an SVG file and returns
// its path.
func writeSample(t *testing.T) string {
	t.Helper()
	f, err := os.Open("testdata/sample.folded")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stacks, err := ParseFolded(f)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, stacks, Options{Title: "CPU samples", Subtitle: "testdata/sample.folded"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sample.svg")
	if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// keepScreenshot writes png to $DSTAR_FLAMEGRAPH_SHOTS/name, when that is
// set, so that a person can look at what the test saw.
func keepScreenshot(t *testing.T, name string, png []byte) {
	if dir := os.Getenv("DSTAR_FLAMEGRAPH_SHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// checkNotBlank fails unless png decodes and has many colours: frames,
// text and background, not an empty or error page.
func checkNotBlank(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	colours := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("the screenshot has %d colours; a flame graph has many", len(colours))
	}
	return img
}

// The SVG loads, its script runs to the end without an error, the frames'
// names are in the DOM, and it renders to a picture.
func TestSVGInChromium(t *testing.T) {
	chromium := bpftest.Chromium(t)
	svg := writeSample(t)
	// A hung browser must not hold the test until go test's own timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dump := exec.CommandContext(ctx, chromium, append(bpftest.ChromiumFlags(t), "--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+svg)...)
	var stderr bytes.Buffer
	dump.Stderr = &stderr
	dom, err := dump.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(dom, []byte(`data-ready="`)) {
		t.Errorf("the script did not run to its end (no data-ready on the root)")
	}
	for _, name := range []string{"execute_simple_command", "vmlinux`copy_process", "secondary_startup_64_[k]",
		"std::vector&lt;std::pair&lt;int, std::string&gt;&gt;::operator&lt;&lt;&amp;\"x\""} {
		if !bytes.Contains(dom, []byte(name)) {
			t.Errorf("%s is not in the rendered DOM", name)
		}
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	cmd := exec.CommandContext(ctx, chromium, append(bpftest.ChromiumFlags(t), "--screenshot="+shot, "file://"+svg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	keepScreenshot(t, "flamegraph.png", data)
	checkNotBlank(t, data)
}

// frameBox is where a frame is drawn, as the page reports it.
type frameBox struct {
	X, Y, W, H float64
	Hidden     bool
	Ancestor   bool
	Label      string
}

// boxJS returns a frame's box, found by name, as JSON-able values.
const boxJS = `(function (name) {
	var f = window.flamegraph.frames.find(function (f) { return f.name === name; });
	var r = f.rect.getBoundingClientRect();
	return {X: r.x, Y: r.y, W: parseFloat(f.rect.getAttribute("width")), H: r.height,
		Hidden: f.g.getAttribute("display") === "none",
		Ancestor: f.g.classList.contains("ancestor"), Label: f.text.textContent};
})`

func (p *page) box(t *testing.T, name string) frameBox {
	t.Helper()
	var b frameBox
	arg, _ := json.Marshal(name)
	p.eval(t, boxJS+"("+string(arg)+")", &b)
	return b
}

// Pointing at a frame shows its details; clicking it zooms so that it
// fills the width, its ancestors full width and faded, everything else
// hidden; "Reset Zoom" and the root undo it; search colours matches.
func TestSVGInteractsInChromium(t *testing.T) {
	chromium := bpftest.Chromium(t)
	svg := writeSample(t)
	d := startDevtools(t, chromium)
	p := d.open(t, "file://"+svg)
	p.waitFor(t, `document.documentElement.getAttribute("data-ready")`)

	const plotW = 1180.0
	before := p.box(t, "make_child")
	if math.Abs(before.W-280.0/1563*plotW) > 0.01 {
		t.Fatalf("make_child is %v wide before zooming, want %v", before.W, 280.0/1563*plotW)
	}
	cx, cy := before.X+before.W/2, before.Y+before.H/2

	p.mouse(t, "mouseMoved", cx, cy)
	var details string
	p.eval(t, `document.getElementById("details").textContent`, &details)
	if want := "Function: make_child (280 samples, 17.91%)"; details != want {
		t.Errorf("details line %q while over make_child, want %q", details, want)
	}
	keepScreenshot(t, "flamegraph-hover.png", p.screenshot(t))

	p.click(t, cx, cy)
	for name, want := range map[string]frameBox{
		"make_child":           {X: 10, W: plotW, Label: "make_child"},
		"fork":                 {X: 10, W: plotW, Label: "fork"},
		"vmlinux`copy_process": {X: 10 + 80.0/280*plotW, W: 200.0 / 280 * plotW, Label: "vmlinux`copy_process"},
		"bash":                 {X: 10, W: plotW, Ancestor: true, Label: "bash"},
		"all":                  {X: 10, W: plotW, Ancestor: true, Label: "all"},
		"yyparse":              {Hidden: true},
		"sleep":                {Hidden: true},
	} {
		got := p.box(t, name)
		if got.Hidden != want.Hidden || !want.Hidden &&
			(math.Abs(got.X-want.X) > 0.01 || math.Abs(got.W-want.W) > 0.01 || got.Ancestor != want.Ancestor || got.Label != want.Label) {
			t.Errorf("after clicking make_child, %s is %+v, want %+v", name, got, want)
		}
	}
	var resetVisible string
	p.eval(t, `document.getElementById("reset").getAttribute("visibility")`, &resetVisible)
	if resetVisible != "visible" {
		t.Errorf("Reset Zoom is %q after a zoom", resetVisible)
	}
	zoomed := p.screenshot(t)
	keepScreenshot(t, "flamegraph-zoomed.png", zoomed)
	checkNotBlank(t, zoomed)

	// Reset Zoom puts every frame back where WriteSVG drew it.
	var reset struct{ X, Y, W, H float64 }
	p.eval(t, `(function () { var r = document.getElementById("reset").getBoundingClientRect();
		return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &reset)
	p.click(t, reset.X+reset.W/2, reset.Y+reset.H/2)
	if after := p.box(t, "make_child"); math.Abs(after.W-before.W) > 0.01 || math.Abs(after.X-before.X) > 0.01 || after.Ancestor {
		t.Errorf("after Reset Zoom make_child is %+v, want %+v", after, before)
	}
	if sleep := p.box(t, "sleep"); sleep.Hidden {
		t.Error("after Reset Zoom sleep is still hidden")
	}

	// Zoom in by clicking yyparse, out by clicking the root.
	yy := p.box(t, "yyparse")
	p.click(t, yy.X+yy.W/2, yy.Y+yy.H/2)
	if got := p.box(t, "yyparse"); math.Abs(got.W-plotW) > 0.01 {
		t.Errorf("after clicking yyparse it is %v wide", got.W)
	}
	root := p.box(t, "all")
	p.click(t, root.X+10, root.Y+root.H/2)
	if got := p.box(t, "yyparse"); math.Abs(got.W-yy.W) > 0.01 {
		t.Errorf("after clicking the root yyparse is %v wide, want %v", got.W, yy.W)
	}

	// Search: the kernel frames cover 200+25+300 of 1563 samples.
	var matched string
	p.eval(t, `(window.flamegraph.search("^vmlinux"), document.getElementById("matched").textContent)`, &matched)
	if matched != "Matched: 33.59%" {
		t.Errorf("searching ^vmlinux says %q", matched)
	}
	keepScreenshot(t, "flamegraph-search.png", p.screenshot(t))
	p.eval(t, `window.flamegraph.search("")`, nil)

	// Ctrl-F asks for a regular expression.
	d.mu.Lock()
	d.promptAnswer = "^(yy|read_)"
	d.mu.Unlock()
	p.ctrlKey(t, "f")
	p.waitFor(t, `document.getElementById("matched").textContent !== ""`)
	p.eval(t, `document.getElementById("matched").textContent`, &matched)
	if want := "Matched: 17.59%"; matched != want { // read_command's 275 of 1563; yyparse is inside it
		t.Errorf("Ctrl-F and ^(yy|read_) say %q, want %q", matched, want)
	}
	var fills map[string]string
	p.eval(t, `(function () { var m = {}; window.flamegraph.frames.forEach(function (f) {
		m[f.name] = f.rect.getAttribute("fill"); }); return m; })()`, &fills)
	if fills["yyparse"] != fills["read_command"] || fills["yyparse"] == fills["parse_command"] {
		t.Errorf("after the search, yyparse is %s, read_command %s, parse_command %s: want the first two alike",
			fills["yyparse"], fills["read_command"], fills["parse_command"])
	}

	// The script's label rule is the Go one.
	for _, w := range []float64{5, 27, 28, 40, 100, 107.5, 108, 300} {
		for _, name := range []string{"execute_command", "ünïcödé_fünc", "a"} {
			var got string
			arg, _ := json.Marshal(name)
			p.eval(t, "window.flamegraph.label("+string(arg)+", "+strconvF(w)+")", &got)
			if want := label(name, w); got != want {
				t.Errorf("script label(%q, %v) = %q, Go says %q", name, w, got, want)
			}
		}
	}
}

func strconvF(v float64) string { b, _ := json.Marshal(v); return string(b) }
