package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/dstar-trace/dstar/starlark/agent"
)

// runServe is `dstar serve [--listen ADDR] PATH...`: the agent, until
// SIGTERM or SIGINT (SIGHUP reloads the scripts).
func runServe(prog string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog+" serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", agent.DefaultListen, "`address` to serve /metrics, /healthz, /scripts and /debug/pprof/ on")
	webConfig := fs.String("web.config.file", "", "`file` of TLS and basic authentication settings (Prometheus exporter-toolkit's web configuration)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s serve [--listen ADDR] [--web.config.file FILE] SCRIPT.star|DIR...\n\n", prog)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	if *webConfig != "" {
		if err := web.Validate(*webConfig); err != nil {
			fmt.Fprintf(stderr, "%s: %s: %v\n", prog, *webConfig, err)
			return exitError
		}
	}
	a, err := agent.New(agent.Config{Paths: fs.Args(), Stdout: stdout, Stderr: stderr, Prog: prog})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitError
	}
	ln, err := agent.Listen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitError
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	srv := a.NewServer()
	served := make(chan error, 1)
	// The exporter toolkit serves TLS and basic authentication as its web
	// configuration says, and plain HTTP without one.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { served <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: webConfig}, logger) }()
	scheme := "http"
	if *webConfig != "" {
		scheme = "http(s, as " + *webConfig + " says)"
	}
	fmt.Fprintf(stderr, "%s: serving on %s://%s/metrics\n", prog, scheme, ln.Addr())
	a.Start()
	status := exitOK
loop:
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if err := a.Reload(); err != nil {
					fmt.Fprintf(stderr, "%s: reload: %v (the scripts running go on)\n", prog, err)
				}
				continue
			}
			break loop
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(stderr, "%s: %v\n", prog, err)
				status = exitError
			}
			break loop
		}
	}
	srv.Close()
	a.Close()
	return status
}
