package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/crypto/bcrypt"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// freeAddr returns a localhost address nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP polls url until it answers 200: a server's readiness is only
// visible that way.
func waitHTTP(t *testing.T, url string, limit time.Duration, exited <-chan struct{}, stderr *bpftest.Buffer) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited before %s answered\n%s", url, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v: %v\n%s", url, limit, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startServe starts `dstar serve` on the scripts of dir.
func startServe(t *testing.T, dir string) (addr string, cmd *exec.Cmd, stderr *bpftest.Buffer, exited chan struct{}) {
	t.Helper()
	addr = freeAddr(t)
	cmd = exec.Command(dstarBin, "serve", "--listen", addr, dir)
	stderr = &bpftest.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	waitHTTP(t, "http://"+addr+"/healthz", 20*time.Second, exited, stderr)
	return addr, cmd, stderr, exited
}

// scriptsState returns /scripts' state of each script by name.
func scriptsState(t *testing.T, addr string) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/scripts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, s := range list {
		out[s["name"].(string)] = s
	}
	return out
}

// waitState waits until /scripts says script name is in state.
func waitState(t *testing.T, addr, name, state string, stderr *bpftest.Buffer) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := scriptsState(t, addr)[name]
		if s != nil && s["state"] == state {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("script %s is %v, not %s\n%s", name, s, state, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promQuery runs an instant PromQL query at time at and returns the
// single result's value.
func promQuery(t *testing.T, prom, query string, at time.Time) (float64, error) {
	t.Helper()
	u := prom + "/api/v1/query?" + url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", query, r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d results, want 1", query, len(r.Data.Result))
	}
	return strconv.ParseFloat(r.Data.Result[0].Value[1].(string), 64)
}

// TestServePrometheus: a real Prometheus server scrapes `dstar serve`;
// rate( ) over the exported count of a load generator's getpid calls
// matches the load, and histogram_quantile( ) over an exported quantize
// of its write sizes falls in the bucket that counts them.
func TestServePrometheus(t *testing.T) {
	bpftest.Require(t)
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		bpftest.Skip(t, "no prometheus server to scrape dstar (Debian package prometheus)")
	}
	devnull, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	dir := t.TempDir()
	scripts := filepath.Join(dir, "scripts")
	os.Mkdir(scripts, 0o755)
	// The load is this process's: its pid and its /dev/null descriptor.
	script := fmt.Sprintf(`s = dtrace.session(quiet=True)
s.attach("""
syscall::getpid:entry /pid == %[1]d/ { @calls["gen"] = count(); }
syscall::write:entry /pid == %[1]d && arg0 == %[2]d/ { @size = quantize(arg2); }
""")
dtrace.export(s, "@calls", name="test_getpid_calls_total", help="getpid calls.", labels=["load"])
dtrace.export(s, "@size", name="test_write_bytes", help="write sizes.")
`, os.Getpid(), devnull.Fd())
	os.WriteFile(filepath.Join(scripts, "load.star"), []byte(script), 0o644)
	addr, serve, serveErr, exited := startServe(t, scripts)
	waitState(t, addr, "load", "done", serveErr)

	promAddr := freeAddr(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dstar\n    static_configs:\n      - targets: ['%s']\n", addr)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfgFile, []byte(cfg), 0o644)
	prom := exec.Command(promBin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)
	promErr := &bpftest.Buffer{}
	prom.Stdout, prom.Stderr = io.Discard, promErr
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	promExited := make(chan struct{})
	go func() { prom.Wait(); close(promExited) }()
	defer func() { prom.Process.Kill(); <-promExited }()
	waitHTTP(t, "http://"+promAddr+"/-/ready", 60*time.Second, promExited, promErr)

	// One call of each first, and the load only once Prometheus has
	// scraped their series: rate( ) needs samples all over its window.
	syscall.Getpid()
	buf := make([]byte, 1000)
	devnull.Write(buf)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := promQuery(t, "http://"+promAddr, `count_over_time(test_write_bytes_count[1m]) >= 2`, time.Now())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus has not scraped the exported metrics: %v\n%s", err, promErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The load: 2,000 getpid calls and 200 writes of 1,000 bytes a second,
	// paced against the clock, for 12 s.
	const rate, writes, length = 2000, 200, 12 * time.Second
	start := time.Now()
	calls := 0
	for el := time.Duration(0); el < length; el = time.Since(start) {
		for want := int(el.Seconds() * rate); calls < want; calls++ {
			syscall.Getpid()
			if calls%(rate/writes) == 0 {
				devnull.Write(buf)
			}
		}
		time.Sleep(time.Millisecond)
	}
	end := time.Now()
	loadRate := float64(calls) / end.Sub(start).Seconds()
	// Query a window inside the load once Prometheus has scraped past it.
	at := end.Add(-1500 * time.Millisecond)
	var got, q float64
	deadline = time.Now().Add(30 * time.Second)
	for {
		var last float64
		last, err = promQuery(t, "http://"+promAddr, `timestamp(test_write_bytes_count)`, time.Now())
		if err == nil && last < float64(end.Unix()) {
			err = fmt.Errorf("prometheus has not scraped since the load ended")
		}
		if err == nil {
			got, err = promQuery(t, "http://"+promAddr, `sum(rate(test_getpid_calls_total{load="gen"}[8s]))`, at)
		}
		if err == nil {
			q, err = promQuery(t, "http://"+promAddr, `histogram_quantile(0.5, sum by (le) (rate(test_write_bytes_bucket[8s])))`, at)
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%v\nprometheus:\n%s", err, promErr.String())
	}
	if got < 0.9*loadRate || got > 1.1*loadRate {
		t.Errorf("rate() of the exported count is %.1f/s, the load was %.1f/s: more than 10%% apart", got, loadRate)
	}
	// quantize counts 1,000 in the bucket of 512 to 1,023.
	if q <= 511 || q > 1023 {
		t.Errorf("histogram_quantile(0.5) of the exported write sizes is %v, want it in (511, 1023]", q)
	}
	t.Logf("load %.1f/s, rate() %.1f/s; median write size %.0f", loadRate, got, q)

	// SIGTERM detaches everything and exits 0.
	objs := objectsOf(t, serve.Process.Pid)
	if len(objs.progs) == 0 {
		t.Fatalf("dstar serve holds no BPF programs while its script is attached")
	}
	serve.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("dstar serve did not exit on SIGTERM\n%s", serveErr.String())
	}
	if code := serve.ProcessState.ExitCode(); code != 0 {
		t.Errorf("dstar serve exited %d on SIGTERM, want 0\n%s", code, serveErr.String())
	}
	objs.gone(t)
}

// TestServeScripts: /scripts shows a failing script's error and restarts,
// a script that parses badly is refused at start naming its line, and
// SIGHUP starts a script added since.
func TestServeScripts(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.star"), []byte("s = dtrace.session()\ns.attach(\"BEGIN { x = ; }\")\n"), 0o644)
	addr, serve, serveErr, _ := startServe(t, dir)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := scriptsState(t, addr)["bad"]
		if s != nil && s["restarts"].(float64) >= 1 {
			if e, _ := s["error"].(string); !strings.Contains(e, "bad.star:2:") || !strings.Contains(e, "syntax error") {
				t.Errorf("bad.star's error in /scripts is %q, want its line and the D syntax error", e)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bad.star was not restarted: %v\n%s", s, serveErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`dstar_script_failed{script="bad"} 1`)) {
		t.Errorf("/metrics does not say bad.star failed:\n%s", body)
	}
	// A script added, then SIGHUP: it runs.
	os.WriteFile(filepath.Join(dir, "good.star"), []byte(`s = dtrace.session()
s.attach("BEGIN { @ = count(); } profile-997 { @k[stack()] = count(); }")
dtrace.export(s, "@", name="good_begins_total")
dtrace.sleep("200ms")
dtrace.pprof(s, "@k", name="kernel")
`), 0o644)
	serve.Process.Signal(syscall.SIGHUP)
	waitState(t, addr, "good", "done", serveErr)
	// Its profile is served, and one nobody made is not.
	resp, err = http.Get("http://" + addr + "/debug/pprof/kernel")
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(resp.Body)
	resp.Body.Close()
	if err != nil || len(p.Sample) == 0 {
		t.Errorf("/debug/pprof/kernel: %v, %v", err, p)
	}
	if resp, err := http.Get("http://" + addr + "/debug/pprof/none"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("/debug/pprof/none: %v %v, want 404", resp.Status, err)
	}
	// Nothing that changes probes is served.
	for _, path := range []string{"/scripts", "/metrics"} {
		resp, err := http.Post("http://"+addr+path, "text/plain", strings.NewReader("BEGIN { exit(0); }"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST %s answered %s, want a refusal", path, resp.Status)
		}
	}

	// A script that does not parse is refused at start, with its line.
	os.WriteFile(filepath.Join(dir, "broken.star"), []byte("s = dtrace.session(\n"), 0o644)
	r := dstar(t, 20*time.Second, "serve", "--listen", freeAddr(t), dir)
	if r.code != 1 || !strings.Contains(r.stderr, "broken.star:2:") {
		t.Errorf("serve with a script that does not parse: status %d, stderr %q; want 1 and the file's line", r.code, r.stderr)
	}
}

// TestServeWebConfig: with the exporter toolkit's web configuration,
// dstar serve speaks TLS and asks for basic authentication; a bad
// configuration is refused at start, naming the file.
func TestServeWebConfig(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := selfSigned(t, certFile, keyFile)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prom: %s\n", certFile, keyFile, hash)), 0o600)
	scripts := filepath.Join(dir, "scripts")
	os.Mkdir(scripts, 0o755)
	os.WriteFile(filepath.Join(scripts, "x.star"), []byte("s = dtrace.session()\ns.attach(\"BEGIN { @ = count(); }\")\ndtrace.export(s, \"@\", name=\"x_total\")\n"), 0o644)

	addr := freeAddr(t)
	cmd := exec.Command(dstarBin, "serve", "--listen", addr, "--web.config.file", cfg, scripts)
	stderr := &bpftest.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(user, pass string) (int, string, error) {
		req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body, err := get("prom", "s3cret")
		if err == nil && code == 200 && strings.Contains(body, "x_total 1") {
			break
		}
		select {
		case <-exited:
			t.Fatalf("dstar serve exited\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics over TLS with the password: %d %v\n%s", code, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, err := get("prom", "wrong"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a wrong password got %d (%v), want 401", code, err)
	}
	if code, _, err := get("", ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("no password got %d (%v), want 401", code, err)
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP served /metrics under a TLS configuration")
		}
	}

	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.key\n  bogus: 1\n"), 0o600)
	r := dstar(t, 20*time.Second, "serve", "--listen", freeAddr(t), "--web.config.file", bad, scripts)
	if r.code != 1 || !strings.Contains(r.stderr, "bad.yml") {
		t.Errorf("a bad web configuration: status %d, stderr %q; want 1, naming the file", r.code, r.stderr)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSigned(t *testing.T, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dstar test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// BenchmarkServeIdle: what dstar serve costs with three scripts attached
// and nothing happening they trace much of: CPU (as a share of one CPU,
// over each 2 s of an iteration) and resident memory.
func BenchmarkServeIdle(b *testing.B) {
	bpftest.Require(b)
	dir := b.TempDir()
	for i, prog := range []string{
		`syscall::getpid:entry { @calls[execname] = count(); }`,
		`syscall::read:entry { self->t = timestamp; } syscall::read:return /self->t/ { @lat = quantize(timestamp - self->t); self->t = 0; }`,
		`sched:::on-cpu { @oncpu[cpu] = count(); }`,
	} {
		src := fmt.Sprintf("s = dtrace.session(quiet=True)\ns.attach(%q)\n", prog)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.star", i)), []byte(src), 0o644)
	}
	addr := freeAddr(b)
	cmd := exec.Command(dstarBin, "serve", "--listen", addr, dir)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/scripts")
		if err == nil {
			var list []map[string]any
			json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			done := 0
			for _, s := range list {
				if s["state"] == "done" {
					done++
				}
			}
			if done == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the three scripts did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ticks := func() float64 { // utime + stime, in clock ticks (100 Hz)
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		u, _ := strconv.ParseFloat(f[11], 64)
		s, _ := strconv.ParseFloat(f[12], 64)
		return u + s
	}
	var cpu, rss float64
	n := 0
	for b.Loop() {
		t0, c0 := time.Now(), ticks()
		time.Sleep(2 * time.Second) // the measurement window: idle is what is measured
		cpu += (ticks() - c0) / 100 / time.Since(t0).Seconds() * 100
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				rss = kb / 1024
			}
		}
		n++
	}
	b.ReportMetric(cpu/float64(n), "%cpu")
	b.ReportMetric(rss, "MiB-rss")
}
