package agent

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultListen is where the agent listens unless told otherwise: this
// machine only.
const DefaultListen = "127.0.0.1:9469"

// maxInFlight bounds the requests served at once; more get 503.
const maxInFlight = 8

// Handler returns the agent's HTTP endpoints.
func (a *Agent) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), &scriptsCollector{a})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		EnableOpenMetrics:   true,
		ErrorHandling:       promhttp.ContinueOnError, // one script's bad metric spoils no other's
		MaxRequestsInFlight: maxInFlight,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /scripts", a.serveScripts)
	mux.HandleFunc("GET /debug/pprof/{name}", a.serveProfile)
	return limit(mux)
}

// limit refuses what no endpoint takes: bodies, and more requests at once
// than maxInFlight.
func limit(h http.Handler) http.Handler {
	sem := make(chan struct{}, maxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 {
			http.Error(w, "request bodies are not accepted", http.StatusRequestEntityTooLarge)
			return
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			http.Error(w, "too many requests", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// NewServer returns an HTTP server for the agent with bounded request
// sizes and times.
func (a *Agent) NewServer() *http.Server {
	return &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
}

// Listen opens addr (DefaultListen when empty).
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultListen
	}
	return net.Listen("tcp", addr)
}

// ScriptStatus is a script's state as /scripts shows it.
type ScriptStatus struct {
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	State    string    `json:"state"`
	Error    string    `json:"error,omitempty"`
	Restarts int       `json:"restarts"`
	Started  time.Time `json:"started"`
	Sessions int       `json:"sessions"`
	Probes   []string  `json:"probes"`
	Records  uint64    `json:"records"`
	Drops    uint64    `json:"drops"`
	Faults   uint64    `json:"faults"`
	Metrics  []string  `json:"metrics"`
}

// Status returns the script's state.
func (s *Script) Status() ScriptStatus {
	s.mu.Lock()
	st := ScriptStatus{Name: scriptName(s.Path), Path: s.Path, State: s.state, Error: s.err, Restarts: s.restarts, Started: s.started}
	r := s.runner
	s.mu.Unlock()
	st.Probes, st.Metrics = []string{}, []string{}
	if r != nil {
		hs := r.Status()
		st.Sessions, st.Records, st.Drops, st.Faults = hs.Sessions, hs.Stats.Records, hs.Stats.Drops, hs.Stats.Errors
		if hs.Probes != nil {
			st.Probes = hs.Probes
		}
		for _, m := range r.Metrics().Metrics() {
			st.Metrics = append(st.Metrics, m.Name())
		}
	}
	return st
}

// scriptName is how metrics and profiles name a script: its file name
// without .star.
func scriptName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".star")
}

// serveProfile serves the latest profile a script made with
// dtrace.pprof(..., name=NAME): the first script's, in path order, that
// has one.
func (a *Agent) serveProfile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	for _, s := range a.Scripts() {
		if run := s.Runner(); run != nil {
			if p, ok := run.Profile(name); ok {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.pb.gz"`)
				w.Write(p)
				return
			}
		}
	}
	http.Error(w, "no script has made a profile named "+name+" (dtrace.pprof(..., name=...))", http.StatusNotFound)
}

func (a *Agent) serveScripts(w http.ResponseWriter, r *http.Request) {
	var out []ScriptStatus
	for _, s := range a.Scripts() {
		out = append(out, s.Status())
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}

// scriptsCollector collects what the scripts export, and the agent's
// own view of each script.
type scriptsCollector struct{ a *Agent }

var (
	upDesc = prometheus.NewDesc("dstar_script_up",
		"Whether the script is running or has set up its sessions (1), or failed or stopped (0).", []string{"script"}, nil)
	restartsDesc = prometheus.NewDesc("dstar_script_restarts_total",
		"Times the script failed and was started again.", []string{"script"}, nil)
	failedDesc = prometheus.NewDesc("dstar_script_failed",
		"Whether the script's last run ended in an error (its text is in /scripts).", []string{"script"}, nil)
	recordsDesc = prometheus.NewDesc("dstar_script_records_total",
		"Records the script's programs traced and the agent read.", []string{"script"}, nil)
	dropsDesc = prometheus.NewDesc("dstar_script_drops_total",
		"Records and aggregation updates of the script's programs that were lost.", []string{"script"}, nil)
	faultsDesc = prometheus.NewDesc("dstar_script_faults_total",
		"Run-time faults of the script's programs.", []string{"script"}, nil)
	probesDesc = prometheus.NewDesc("dstar_script_probes",
		"Probes the script's programs have attached.", []string{"script"}, nil)
)

// Describe sends nothing: scripts come and go (an unchecked collector).
func (c *scriptsCollector) Describe(chan<- *prometheus.Desc) {}

func (c *scriptsCollector) Collect(ch chan<- prometheus.Metric) {
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, s := range c.a.Scripts() {
		st := s.Status()
		n := st.Name
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, b2f(st.State == StateRunning || st.State == StateDone), n)
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(st.Restarts), n)
		ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.GaugeValue, b2f(st.Error != ""), n)
		ch <- prometheus.MustNewConstMetric(recordsDesc, prometheus.CounterValue, float64(st.Records), n)
		ch <- prometheus.MustNewConstMetric(dropsDesc, prometheus.CounterValue, float64(st.Drops), n)
		ch <- prometheus.MustNewConstMetric(faultsDesc, prometheus.CounterValue, float64(st.Faults), n)
		ch <- prometheus.MustNewConstMetric(probesDesc, prometheus.GaugeValue, float64(len(st.Probes)), n)
		if r := s.Runner(); r != nil {
			r.Metrics().Collect(ch)
		}
	}
}
