package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestServeAsTheDaemonSetRuns runs what the DaemonSet's pod runs: dstar
// with the container's arguments, the ConfigMap's scripts laid out as the
// kubelet mounts them, and only the container's capabilities. It asks
// what the probes and Prometheus ask, then stops dstar as the kubelet
// does. Only --listen differs: loopback, on a free port.
func TestServeAsTheDaemonSetRuns(t *testing.T) {
	setpriv := requirePod(t)
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	_, paths, ok := serveArgs(c.Args)
	if !ok || len(paths) != 1 {
		t.Fatalf("args %v: want serve and one scripts directory", c.Args)
	}

	// The scripts, each made to say when its code has run (the agent
	// passes what scripts print to its standard output).
	dir := filepath.Join(t.TempDir(), "scripts")
	scripts := map[string]string{}
	for name, src := range m.configMaps[0].Data {
		scripts[name] = src + "\nprint(\"started " + name + "\")\n"
	}
	mountConfigMap(t, dir, scripts)

	var args []string
	for i := 0; i < len(c.Args); i++ {
		switch a := c.Args[i]; {
		case a == "--listen" || a == "-listen":
			args = append(args, a, "127.0.0.1:0")
			i++
		case strings.HasPrefix(a, "--listen=") || strings.HasPrefix(a, "-listen="):
			args = append(args, "--listen=127.0.0.1:0")
		case a == paths[0]:
			args = append(args, dir)
		default:
			args = append(args, a)
		}
	}
	caps, noNewPrivs := capabilities(c.SecurityContext)
	cmd := withCapabilities(t.Context(), setpriv, caps, noNewPrivs, dstarBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })

	// What dstar prints, read as it comes: the address it serves on, from
	// its log; the scripts that have run, from theirs.
	var stderr bpftest.Buffer
	listening := make(chan string, 1)
	started := make(chan string, len(scripts))
	failed := make(chan string, 1)
	exited := make(chan error, 1)
	var reading sync.WaitGroup
	reading.Add(2)
	go func() {
		defer reading.Done()
		serving := regexp.MustCompile(`serving on http://(\S+)/metrics`)
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			fmt.Fprintln(&stderr, sc.Text())
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[1]
			}
			if strings.Contains(sc.Text(), " failed (restarting in ") {
				select {
				case failed <- sc.Text():
				default:
				}
			}
		}
	}()
	go func() {
		defer reading.Done()
		defer close(started)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "started "); ok {
				started <- name
			}
		}
	}()
	go func() {
		reading.Wait()
		exited <- cmd.Wait()
	}()

	var addr string
	select {
	case addr = <-listening:
	case err := <-exited:
		t.Fatalf("dstar serve exited (%v) before listening\n%s", err, stderr.String())
	}
	for n := 0; n < len(scripts); n++ {
		select {
		case _, ok := <-started:
			if !ok {
				t.Fatalf("%d of %d scripts ran before dstar's output ended\n%s", n, len(scripts), stderr.String())
			}
		case f := <-failed:
			t.Fatalf("a script failed: %s\n%s", f, stderr.String())
		}
	}

	// A read(2) of this process's, which the syscalls script counts.
	if _, err := os.ReadFile("/proc/self/stat"); err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s, %v\n%s", path, resp.Status, err, b)
		}
		return string(b)
	}
	for _, p := range []string{c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path} {
		if body := get(p); strings.TrimSpace(body) != "ok" {
			t.Errorf("GET %s (a probe's): %q, want ok", p, body)
		}
	}
	metrics := get(ds.Spec.Template.Annotations["prometheus.io/path"])
	self := filepath.Base(os.Args[0])[:min(15, len(filepath.Base(os.Args[0])))] // execname: comm, 15 bytes at most
	for _, want := range []string{
		`syscalls_total{syscall="read"} `,
		`syscall_read_calls_total{execname="` + self + `"} `,
		`syscall_read_latency_ns_bucket{execname="` + self + `",le="+Inf"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	var states []struct {
		Name, State, Error string
		Restarts           int
	}
	if err := json.Unmarshal([]byte(get("/scripts")), &states); err != nil {
		t.Fatal(err)
	}
	if len(states) != len(scripts) {
		t.Errorf("/scripts lists %d scripts, want %d: %+v", len(states), len(scripts), states)
	}
	for _, s := range states {
		if s.State != "done" || s.Restarts != 0 || s.Error != "" {
			t.Errorf("script %s: state %s, %d restarts, error %q; want done, as it returned", s.Name, s.State, s.Restarts, s.Error)
		}
	}

	// The kubelet's stop: SIGTERM, then SIGKILL after the grace period.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(*ds.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM dstar serve exited with %v, want 0\n%s", err, stderr.String())
		}
	case <-time.After(grace):
		t.Errorf("dstar serve did not exit within terminationGracePeriodSeconds (%v) of SIGTERM: the kubelet would kill it\n%s", grace, stderr.String())
	}
}

// mountConfigMap lays files out in dir as the kubelet mounts a
// ConfigMap: the files in a timestamped directory, ..data a link to it,
// and each name a link through ..data, so that an update swaps one link.
func mountConfigMap(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	const stamp = "..2026_12_05_07_00_00.000000001"
	if err := os.MkdirAll(filepath.Join(dir, stamp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stamp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, stamp, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}
