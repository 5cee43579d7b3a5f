package cfi

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// The tables are checked against binutils' readelf, which interprets
// call-frame information independently: for every row readelf prints,
// and every row of ours, both give the same rule at that address.

// refRange is one FDE as readelf interprets it.
type refRange struct {
	lo, hi uint64
	rows   []Row // rule from each row's PC
}

var (
	fdeLine = regexp.MustCompile(`^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	cieLine = regexp.MustCompile(`^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE "([^"]*)"`)
	rowLine = regexp.MustCompile(`^([0-9a-f]{16}) `)
)

// readelfFrames runs readelf --debug-dump=frames-interp on path and
// returns the FDEs of each section it shows (".eh_frame", ".debug_frame").
func readelfFrames(t *testing.T, path string) map[string][]refRange {
	t.Helper()
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("readelf (binutils) is not installed: it is the reference the tables are checked against")
	}
	out, err := exec.Command(readelf, "--debug-dump=frames-interp", path).Output()
	if err != nil && len(out) == 0 {
		// readelf exits 1 on some files it dumps completely (libc's):
		// only no output at all is a failure.
		t.Fatalf("readelf %s: %v", path, err)
	}
	secs := map[string][]refRange{}
	var sec string
	cieRows := map[string][]Row{}
	cieSignal := map[string]bool{}
	var cols []string
	var cur *refRange
	var curCIE string
	var inCIE string
	flush := func() {
		if cur == nil {
			return
		}
		if len(cur.rows) == 0 {
			// readelf prints no rows for an FDE without instructions:
			// the CIE's initial rule holds.
			for _, r := range cieRows[sec+curCIE] {
				r.PC = cur.lo
				cur.rows = append(cur.rows, r)
			}
		}
		secs[sec] = append(secs[sec], *cur)
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Contents of the ") {
			flush()
			// "Contents of the .eh_frame section (loaded from F):"
			sec = strings.Fields(strings.TrimPrefix(line, "Contents of the "))[0]
			continue
		}
		if m := cieLine.FindStringSubmatch(line); m != nil {
			flush()
			inCIE = m[1]
			cieSignal[sec+m[1]] = strings.Contains(m[2], "S")
			continue
		}
		if m := fdeLine.FindStringSubmatch(line); m != nil {
			flush()
			inCIE = ""
			lo, _ := strconv.ParseUint(m[3], 16, 64)
			hi, _ := strconv.ParseUint(m[4], 16, 64)
			cur, curCIE = &refRange{lo: lo, hi: hi}, m[2]
			continue
		}
		if strings.HasPrefix(line, "   LOC") {
			cols = strings.Fields(line)
			continue
		}
		if m := rowLine.FindStringSubmatch(line); m != nil {
			// "r10 (r10)", a register rule, is one column.
			var f []string
			for _, w := range strings.Fields(line) {
				if strings.HasPrefix(w, "(") && len(f) > 0 {
					f[len(f)-1] += " " + w
					continue
				}
				f = append(f, w)
			}
			pc, _ := strconv.ParseUint(f[0], 16, 64)
			col := func(name string) string {
				for i, c := range cols {
					if c == name && i < len(f) {
						return f[i]
					}
				}
				return "u"
			}
			signal := cieSignal[sec+curCIE]
			if inCIE != "" {
				signal = cieSignal[sec+inCIE]
			}
			r := refRule(f[1], col("rbp"), col("ra"), signal)
			row := Row{PC: pc, CFA: r.CFA, FP: r.FP, CFAOff: r.CFAOff, FPOff: r.FPOff}
			if inCIE != "" {
				cieRows[sec+inCIE] = append(cieRows[sec+inCIE], row)
			} else if cur != nil {
				cur.rows = append(cur.rows, row)
			}
		}
	}
	flush()
	for _, frs := range secs {
		sort.Slice(frs, func(i, j int) bool { return frs[i].lo < frs[j].lo })
	}
	return secs
}

// refRule is the rule readelf's columns mean. Expressions ("exp") are
// told apart by the CIE: a signal frame's or (the only other one files
// carry) the PLT's; their offsets are not shown, so only kinds compare.
func refRule(cfa, rbp, ra string, signal bool) Rule {
	if ra == "u" {
		return Rule{CFA: CFAEnd}
	}
	var r Rule
	switch {
	case cfa == "exp" && signal:
		return Rule{CFA: CFASignal, FP: FPAtCFA}
	case cfa == "exp":
		r.CFA = CFAPLT
	case strings.HasPrefix(cfa, "rsp+"):
		r.CFA = CFAFromSP
	case strings.HasPrefix(cfa, "rbp+"):
		r.CFA = CFAFromFP
	default:
		return Rule{}
	}
	if r.CFA != CFAPLT {
		off, err := strconv.ParseInt(cfa[4:], 10, 32)
		if err != nil {
			return Rule{}
		}
		r.CFAOff = int32(off)
	}
	if ra != "c-8" {
		return Rule{}
	}
	switch {
	case rbp == "u" || rbp == "s":
		r.FP = FPSame
	case strings.HasPrefix(rbp, "c"):
		off, err := strconv.ParseInt(rbp[1:], 10, 32)
		if err != nil {
			return Rule{}
		}
		r.FP, r.FPOff = FPAtCFA, int32(off)
	default:
		r.FP = FPLost
	}
	return r
}

// refLookup is readelf's rule at pc: eh_frame's FDEs first, then
// debug_frame's, as FromELF takes them.
func refLookup(secs map[string][]refRange, pc uint64) Rule {
	for _, s := range []string{".eh_frame", ".debug_frame"} {
		frs := secs[s]
		j := sort.Search(len(frs), func(i int) bool { return frs[i].hi > pc })
		for _, fr := range frs[j:] {
			if pc < fr.lo {
				break
			}
			i := sort.Search(len(fr.rows), func(i int) bool { return fr.rows[i].PC > pc })
			if i == 0 {
				return Rule{}
			}
			return fr.rows[i-1].Rule()
		}
	}
	return Rule{}
}

// comparable drops what readelf does not show: the offsets of the PLT
// and signal rules.
func comparable(r Rule) Rule {
	if r.CFA == CFAPLT || r.CFA == CFASignal {
		r.CFAOff, r.FPOff = 0, 0
	}
	return r
}

// checkAgainstReadelf compares path's table with readelf's
// interpretation at every row of either, and at the end of every FDE.
func checkAgainstReadelf(t *testing.T, path string) {
	t.Helper()
	secs := readelfFrames(t, path)
	tab, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range secs {
		for _, fr := range s {
			pcs = append(pcs, fr.lo, fr.hi)
			for _, r := range fr.rows {
				if r.PC >= fr.lo && r.PC < fr.hi {
					pcs = append(pcs, r.PC)
				}
			}
		}
	}
	for _, r := range tab.Rows {
		pcs = append(pcs, r.PC)
	}
	if len(secs[".eh_frame"])+len(secs[".debug_frame"]) == 0 {
		t.Fatalf("readelf shows no FDE in %s", path)
	}
	bad := 0
	for _, pc := range pcs {
		want, got := comparable(refLookup(secs, pc)), comparable(tab.Lookup(pc))
		if want != got {
			if bad++; bad <= 10 {
				t.Errorf("%s at %#x: table has %v, readelf %v", filepath.Base(path), pc, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d addresses differ", path, bad, len(pcs))
	}
	kinds := map[CFAKind]int{}
	for _, r := range tab.Rows {
		kinds[r.CFA]++
	}
	t.Logf("%s: %d rows, %d addresses checked, kinds %v", filepath.Base(path), len(tab.Rows), len(pcs), kinds)
}

func TestReadelfSystemFiles(t *testing.T) {
	for _, path := range []string{"/usr/bin/gzip", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				t.Skipf("%s: %v", path, err)
			}
			checkAgainstReadelf(t, real)
		})
	}
}

// frameless is a C program whose leaves keep no frame and whose other
// functions move the stack pointer in several steps.
const frameless = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) long leaf(long *v, int n) { long s = 0; for (int i = 0; i < n; i++) s += v[i] * 3; return s; }
__attribute__((noinline)) long middle(int n) { long v[64]; for (int i = 0; i < 64; i++) v[i] = i + n; return leaf(v, 64) + n; }
__attribute__((noinline)) long outer(int n) { char *p = malloc(n + 1); memset(p, 1, n); long s = middle(n) + p[n / 2]; free(p); return s; }
int main(int argc, char **argv) { long s = 0; for (int i = 0; i < (argc > 1 ? atoi(argv[1]) : 10); i++) s += outer(i + 1); printf("%ld\n", s); return 0; }
`

func TestReadelfCompiled(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"omitfp", []string{"-O2", "-fomit-frame-pointer"}},
		{"withfp", []string{"-O1", "-fno-omit-frame-pointer"}},
		// Only .debug_frame: no .eh_frame at all.
		{"debugframe", []string{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := bpftest.BuildC(t, dir, c.name, frameless, c.flags...)
			checkAgainstReadelf(t, path)
		})
	}
}

func TestNoCFI(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "empty")
	if err := os.WriteFile(path, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("Open of a non-ELF file succeeded")
	}
}

// TestReadelfGo: a Go binary's call-frame information is .debug_frame
// only (compressed), with Go's own CIEs.
func TestReadelfGo(t *testing.T) {
	path := bpftest.BuildGo(t, t.TempDir(), "gohello", "package main\n\nfunc main() { println(\"hello\") }\n")
	checkAgainstReadelf(t, path)
}
