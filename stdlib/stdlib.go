// Package stdlib is what ships inside the dstar binary: Starlark modules
// that scripts load as "@stdlib//NAME.star", and the tools that
// `dstar tool NAME` runs (tools/NAME.star).
package stdlib

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.star tools/*.star
var files embed.FS

// FS holds the library: modules at the top, tools under tools/.
var FS fs.FS = files

// Tool is one `dstar tool`.
type Tool struct {
	Name    string
	Summary string // the first line of the tool's doc comment
	Path    string // inside FS
}

// Tools lists the tools in name order.
func Tools() []Tool {
	ents, _ := fs.ReadDir(files, "tools")
	var out []Tool
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".star")
		if !ok {
			continue
		}
		path := "tools/" + e.Name()
		b, _ := fs.ReadFile(files, path)
		out = append(out, Tool{Name: name, Summary: summary(string(b)), Path: path})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// summary is the first comment line after the "# NAME: " prefix.
func summary(src string) string {
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
		if _, rest, ok := strings.Cut(line, ": "); ok {
			return rest
		}
	}
	return ""
}
