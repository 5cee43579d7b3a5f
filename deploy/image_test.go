package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dockerfile is what the image tests read of deploy/Dockerfile: its
// instructions, continuation lines joined, comments left out.
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(more)
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// execForm decodes an instruction's JSON array ("ENTRYPOINT [...]").
func execForm(t *testing.T, lines []string, instr string) []string {
	t.Helper()
	var last string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, instr+" "); ok {
			last = rest
		}
	}
	var v []string
	if err := json.Unmarshal([]byte(last), &v); err != nil {
		t.Fatalf("Dockerfile %s %s: not in exec form (a JSON array): %v", instr, last, err)
	}
	return v
}

// TestImageRunsWhatTheDaemonSetSays checks the Dockerfile against the
// DaemonSet and go.mod: the static binary at /dstar on an empty base,
// the same default arguments, a Go toolchain go.mod accepts.
func TestImageRunsWhatTheDaemonSetSays(t *testing.T) {
	lines := dockerfile(t)
	var froms []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "FROM "); ok {
			froms = append(froms, rest)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("Dockerfile stages %v: want a build stage and a final one", froms)
	}
	if final := strings.Fields(froms[len(froms)-1])[0]; final != "scratch" && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s: want scratch or distroless static (dstar is one static binary)", final)
	}
	build := strings.Join(lines, "\n")
	if !regexp.MustCompile(`CGO_ENABLED=0\b[^\n]*go build\b[^\n]*\./cmd/dstar`).MatchString(build) {
		t.Error("the Dockerfile does not build ./cmd/dstar with CGO_ENABLED=0")
	}
	if got := execForm(t, lines, "ENTRYPOINT"); !slices.Equal(got, []string{"/dstar"}) {
		t.Errorf("ENTRYPOINT %v, want [/dstar]", got)
	}
	m := loadManifests(t)
	_, c := m.daemonSet(t)
	if got := execForm(t, lines, "CMD"); !slices.Equal(got, c.Args) {
		t.Errorf("CMD %v is not the DaemonSet's args %v", got, c.Args)
	}

	// The toolchain image's Go is the go.mod's release (1.26 for go 1.26.0).
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	argLine := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindStringSubmatch(strings.Join(lines, "\n"))
	if goLine == nil || argLine == nil {
		t.Fatalf("go.mod's go line %q or the Dockerfile's ARG GO_VERSION %q is missing", goLine, argLine)
	}
	if argLine[1] != string(goLine[1]) {
		t.Errorf("Dockerfile builds with Go %s, go.mod says go %s", argLine[1], goLine[1])
	}
}
