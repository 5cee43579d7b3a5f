// Package dtrace is the Starlark module `dtrace`: what a script or the REPL
// sees of dstar. It compiles D (compile, probes), runs sessions that
// attach and detach programs while tracing (session, attach, detach, run,
// wait_until), and reads their data (aggregations, printa, stats).
//
// Only the script's goroutine runs Starlark. The engine's readers hand
// events to it through a bounded queue; when the script falls behind, the
// queue drops events and counts them, so the kernel side never waits on
// the script.
package dtrace
