// Package stdlib is what ships inside the dstar binary: Starlark modules
// that scripts load as "@stdlib//NAME.star", the tools that
// `dstar tool NAME` runs (tools/NAME.star), and the D library (d/*.d)
// that the compiler reads before every D program.
package stdlib

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.star tools/*.star
var files embed.FS

//go:embed d/*.d
var dfiles embed.FS

// DFile is one file of the D library.
type DFile struct {
	Name string // as errors name it: "stdlib/d/procfs.d"
	Text string
}

// DLibrary returns the D library files (d/*.d) in name order: the types,
// translators and constants that every D program may use, as DTrace's
// /usr/lib/dtrace/*.d. The compiler reads them before a program.
func DLibrary() []DFile {
	ents, _ := fs.ReadDir(dfiles, "d")
	var out []DFile
	for _, e := range ents {
		b, _ := fs.ReadFile(dfiles, "d/"+e.Name())
		out = append(out, DFile{Name: "stdlib/d/" + e.Name(), Text: string(b)})
	}
	return out
}

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
