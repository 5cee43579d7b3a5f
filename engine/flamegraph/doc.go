// Package flamegraph reads and writes folded stacks and draws them as a
// flame graph.
//
// Folded stacks are lines of the form
//
//	root;caller;callee 42
//
// — frames root first, separated by semicolons, then a space and how many
// samples ended in that stack. It is the format FlameGraph's flamegraph.pl
// and speedscope read, so a profile dstar writes with WriteFolded can be
// taken to those tools.
//
// WriteSVG draws stacks as a flame graph in one self-contained SVG file: no
// external script, style sheet or font, so that a browser opens it directly.
// Each frame is a rectangle whose width is proportional to its samples,
// with the root ("all") at the bottom and callees stacked above their
// callers; siblings are ordered by name, so the same stacks always give the
// same bytes. A script embedded in the SVG shows a frame's name, samples and
// share of the total when the pointer is over it, zooms into a frame when it
// is clicked (its ancestors stay, drawn full width and faded), resets when
// the root or "Reset Zoom" is clicked, and highlights frames whose names
// match a regular expression ("Search", or Ctrl-F).
package flamegraph
