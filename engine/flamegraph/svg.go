// This file draws frames as an SVG flame graph.

package flamegraph

import (
	"bufio"
	_ "embed"
	"errors"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Options say how WriteSVG draws.
type Options struct {
	// Title is drawn centred at the top; empty means "Flame Graph".
	Title string
	// Subtitle, if not empty, is drawn under the title.
	Subtitle string
	// Width is the image width in pixels; 0 means 1200.
	Width int
}

// Geometry, in pixels. Labels are monospace so that how many characters
// fit in a frame can be computed here and in the script alike, with no
// font metrics.
const (
	defaultWidth = 1200
	padX         = 10   // left and right margins
	frameHeight  = 16   // one row of frames; rectangles are a pixel less
	charWidth    = 7.25 // advance of a 12px monospace character (the style's), with a little slack
	labelPad     = 3    // between a frame's left edge and its label
	minLabel     = 3    // characters: narrower frames get no label
	bottomPad    = 30   // room for the details line
	// Frames under this fraction of all samples are not drawn: about a
	// pixel wide at most, they would make big profiles' files huge. They
	// still count in their ancestors' widths, so the total is kept.
	minFraction = 0.001
)

//go:embed flamegraph.js
var script string

// WriteSVG writes stacks as an interactive flame graph (see the package
// documentation). The same stacks and options give the same bytes.
func WriteSVG(w io.Writer, stacks []Stack, opts Options) error {
	frames, total, err := layout(stacks, minFraction)
	if err != nil {
		return err
	}
	width := opts.Width
	if width <= 0 {
		width = defaultWidth
	}
	plotWidth := float64(width - 2*padX)
	if plotWidth < 1 {
		return errors.New("flame graph: width is too small")
	}
	title := opts.Title
	if title == "" {
		title = "Flame Graph"
	}
	topPad := 36
	if opts.Subtitle != "" {
		topPad = 54
	}

	maxDepth := 0
	for _, f := range frames {
		maxDepth = max(maxDepth, f.depth)
	}
	height := topPad + (maxDepth+1)*frameHeight + bottomPad

	bw := bufio.NewWriter(w)
	var b []byte
	b = append(b, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="`...)
	b = strconv.AppendInt(b, int64(width), 10)
	b = append(b, `" height="`...)
	b = strconv.AppendInt(b, int64(height), 10)
	b = append(b, `" viewBox="0 0 `...)
	b = strconv.AppendInt(b, int64(width), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(height), 10)
	b = append(b, `" data-x0="`...)
	b = strconv.AppendInt(b, padX, 10)
	b = append(b, `" data-w="`...)
	b = appendFloat(b, plotWidth)
	b = append(b, `" data-cw="`...)
	b = appendFloat(b, charWidth)
	b = append(b, `" data-total="`...)
	b = strconv.AppendUint(b, total, 10)
	b = append(b, `">
<style>
text { font-family: monospace; font-size: 12px; fill: #000; }
#title { font-family: sans-serif; font-size: 17px; text-anchor: middle; }
#subtitle { font-family: sans-serif; fill: #555; text-anchor: middle; }
#details { font-family: sans-serif; }
#matched { font-family: sans-serif; text-anchor: end; }
.button { font-family: sans-serif; fill: #225; cursor: pointer; }
.button:hover { text-decoration: underline; }
#frames g { cursor: pointer; }
#frames text { pointer-events: none; }
#frames g:hover rect { stroke: #222; stroke-width: 0.6; }
#frames g.ancestor rect { fill-opacity: 0.45; }
</style>
<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#fdfcf7"/><stop offset="1" stop-color="#f1eddc"/></linearGradient></defs>
<rect width="100%" height="100%" fill="url(#bg)"/>
<text id="title" x="`...)
	b = appendFloat(b, float64(width)/2)
	b = append(b, `" y="24">`...)
	b = appendEscaped(b, title)
	b = append(b, "</text>\n"...)
	if opts.Subtitle != "" {
		b = append(b, `<text id="subtitle" x="`...)
		b = appendFloat(b, float64(width)/2)
		b = append(b, `" y="42">`...)
		b = appendEscaped(b, opts.Subtitle)
		b = append(b, "</text>\n"...)
	}
	b = append(b, `<text id="reset" class="button" x="10" y="24" visibility="hidden">Reset Zoom</text>
<text id="search" class="button" x="`...)
	b = strconv.AppendInt(b, int64(width-padX), 10)
	b = append(b, `" y="24" text-anchor="end">Search</text>
<text id="details" x="10" y="`...)
	b = strconv.AppendInt(b, int64(height-10), 10)
	b = append(b, `"> </text>
<text id="matched" x="`...)
	b = strconv.AppendInt(b, int64(width-padX), 10)
	b = append(b, `" y="`...)
	b = strconv.AppendInt(b, int64(height-10), 10)
	b = append(b, `"></text>
<g id="frames">
`...)
	if _, err := bw.Write(b); err != nil {
		return err
	}

	base := float64(height - bottomPad)
	for _, f := range frames {
		// With no samples at all only the root is kept: full width.
		x, w := float64(padX), plotWidth
		if total > 0 {
			x += float64(f.start) / float64(total) * plotWidth
			w = float64(f.count) / float64(total) * plotWidth
		}
		y := base - float64((f.depth+1)*frameHeight)
		b = b[:0]
		b = append(b, `<g data-s="`...)
		b = strconv.AppendUint(b, f.start, 10)
		b = append(b, `" data-n="`...)
		b = strconv.AppendUint(b, f.count, 10)
		b = append(b, `" data-d="`...)
		b = strconv.AppendInt(b, int64(f.depth), 10)
		b = append(b, `"><title>`...)
		b = appendEscaped(b, f.name)
		b = append(b, " ("...)
		b = appendSamples(b, f.count, total)
		b = append(b, `)</title><rect x="`...)
		b = appendFloat(b, x)
		b = append(b, `" y="`...)
		b = appendFloat(b, y)
		b = append(b, `" width="`...)
		b = appendFloat(b, w)
		b = append(b, `" height="`...)
		b = strconv.AppendInt(b, frameHeight-1, 10)
		b = append(b, `" rx="2" fill="`...)
		b = appendColor(b, f.name)
		b = append(b, `"/><text x="`...)
		b = appendFloat(b, x+labelPad)
		b = append(b, `" y="`...)
		b = appendFloat(b, y+11.5)
		b = append(b, `">`...)
		b = appendEscaped(b, label(f.name, w))
		b = append(b, "</text></g>\n"...)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	b = append(b[:0], "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n"...)
	b = append(b, script...)
	b = append(b, "]]></script>\n</svg>\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

// label is what fits of name in a frame w pixels wide: all of it, or its
// start and "..", or nothing when not even minLabel characters fit. The
// script's label function is the same rule, for frames resized by a zoom.
func label(name string, w float64) string {
	fit := int(math.Floor((w - 2*labelPad) / charWidth))
	if fit < minLabel {
		return ""
	}
	if utf8.RuneCountInString(name) <= fit {
		return name
	}
	n := 0
	for i := range name {
		if n == fit-2 {
			return name[:i] + ".."
		}
		n++
	}
	return name
}

// appendSamples appends "1,234 samples, 5.67%".
func appendSamples(b []byte, n, total uint64) []byte {
	s := strconv.FormatUint(n, 10)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, byte(c))
	}
	if n == 1 {
		b = append(b, " sample, "...)
	} else {
		b = append(b, " samples, "...)
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(n) / float64(total)
	}
	b = strconv.AppendFloat(b, pct, 'f', 2, 64)
	return append(b, '%')
}

// appendFloat appends v with at most two decimals: enough for pixels, and
// fewer bytes than full precision.
func appendFloat(b []byte, v float64) []byte {
	v = math.Round(v*100) / 100
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendEscaped appends s as XML character data. Besides the five special
// characters, bytes that are not UTF-8 and characters XML forbids (most
// control characters) become U+FFFD, so that any frame name gives a
// well-formed document.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '&':
			b = append(b, "&amp;"...)
		case r == '<':
			b = append(b, "&lt;"...)
		case r == '>':
			b = append(b, "&gt;"...)
		case r == '"':
			b = append(b, "&quot;"...)
		case r == '\'':
			b = append(b, "&apos;"...)
		case r == utf8.RuneError && size == 1, !xmlChar(r):
			b = append(b, "\uFFFD"...)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// xmlChar reports whether XML 1.0 allows r in a document.
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// isKernel reports whether name is a kernel function, as perf's folded
// stacks ("_[k]") or DTrace's module prefixes write them.
func isKernel(name string) bool {
	if strings.HasSuffix(name, "_[k]") {
		return true
	}
	module, _, found := strings.Cut(name, "`")
	return found && (module == "vmlinux" || module == "genunix" || module == "unix")
}

// appendColor appends a fill colour for name: warm (red to yellow) for
// user code, teal for the kernel. It is a hash of the name, so a function
// has the same colour everywhere in a graph and in every graph.
func appendColor(b []byte, name string) []byte {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	// Three independent-ish fractions from the hash's bytes.
	f1 := float64(v&0xff) / 255
	f2 := float64(v>>8&0xff) / 255
	f3 := float64(v>>16&0xff) / 255
	var hue, sat, light float64
	if isKernel(name) {
		hue, sat, light = 172+28*f1, 0.45+0.2*f2, 0.52+0.12*f3
	} else {
		hue, sat, light = 4+46*f1, 0.78+0.18*f2, 0.53+0.1*f3
	}
	r, g, bl := hslToRGB(hue, sat, light)
	const hex = "0123456789abcdef"
	return append(b, '#', hex[r>>4], hex[r&15], hex[g>>4], hex[g&15], hex[bl>>4], hex[bl&15])
}

// hslToRGB converts hue (degrees), saturation and lightness (0 to 1).
func hslToRGB(h, s, l float64) (r, g, b uint8) {
	c := (1 - math.Abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r1, g1, b1 float64
	switch {
	case hp < 1:
		r1, g1, b1 = c, x, 0
	case hp < 2:
		r1, g1, b1 = x, c, 0
	case hp < 3:
		r1, g1, b1 = 0, c, x
	case hp < 4:
		r1, g1, b1 = 0, x, c
	case hp < 5:
		r1, g1, b1 = x, 0, c
	default:
		r1, g1, b1 = c, 0, x
	}
	m := l - c/2
	to := func(v float64) uint8 { return uint8(math.Round(255 * math.Min(1, math.Max(0, v+m)))) }
	return to(r1), to(g1), to(b1)
}
