package deploy

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/starlark/script"
)

// TestScriptsCompile checks the ConfigMap's scripts as `dstar serve` will
// read them: *.star files, in dstar's Starlark dialect, naming only what a
// script sees (dtrace, json, time, math, struct). Nothing runs.
func TestScriptsCompile(t *testing.T) {
	m := loadManifests(t)
	cm := m.configMaps[0]
	if len(cm.BinaryData) != 0 {
		t.Errorf("ConfigMap %s has binaryData: scripts are text", cm.Name)
	}
	if len(cm.Data) == 0 {
		t.Fatalf("ConfigMap %s holds no scripts", cm.Name)
	}
	r := script.New(script.Options{})
	defer r.Close()
	pre := r.Predeclared()
	for name, src := range cm.Data {
		if !strings.HasSuffix(name, ".star") {
			t.Errorf("%s: key %s does not end in .star: dstar serve runs only *.star files of a directory", m.file[cm], name)
			continue
		}
		// Errors read "deploy/kubernetes/20-scripts.yaml:syscalls.star:3:5: ...".
		filename := m.file[cm] + ":" + name
		if _, _, err := starlark.SourceProgramOptions(script.Dialect, filename, src, pre.Has); err != nil {
			t.Errorf("%v", err)
		}
		if !strings.Contains(src, "dtrace.export(") {
			t.Errorf("%s exports nothing: on a fleet a script's numbers reach Prometheus only through dtrace.export", filename)
		}
	}
}

// TestScriptCheckFails shows what TestScriptsCompile would report.
func TestScriptCheckFails(t *testing.T) {
	pre := script.New(script.Options{}).Predeclared()
	for src, want := range map[string]string{
		"s = dtrace.session(\n":         "x.star:2:1: got end of file",
		"s = dtrace.sesion()\nprint(t)": "x.star:2:7: undefined: t",
	} {
		_, _, err := starlark.SourceProgramOptions(script.Dialect, "x.star", src, pre.Has)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %s", src, err, want)
		}
	}
}
