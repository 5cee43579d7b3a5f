// Package repl is dstar's interactive read-eval-print loop: `dstar repl`,
// and `dstar` with no arguments on a terminal.
//
// Each input is one of three things, told apart by its first line (and,
// for a description alone such as `BEGIN`, by whether the next line
// starts with '{' or '/'):
//
//   - a command, starting with ':' (:help lists them);
//   - a D clause: probe descriptions followed by '{' or '/', as in
//     `syscall::read:entry { @[execname] = count(); }`. Lines are read
//     until its braces balance; it is compiled and attached to the REPL's
//     session;
//   - anything else is Starlark, read as go.starlark.net's REPL reads it:
//     one line, or more while the statement is incomplete. A compound
//     statement ends at a line that starts again in the first column, or
//     on a terminal at a blank line (without one, blank lines inside a
//     def are kept, as in a file). An expression's value is printed.
//
// The REPL's session is a dtrace.session made when first needed — by a D
// clause, a command, or Starlark code that names the global `session` — and
// bound to that global; binding another session to it makes that one the
// REPL's. After every input the session's queued records are printed;
// :run prints them as they arrive until Ctrl-C or a duration passes.
//
// On a terminal, input is edited with liner: prompts ("dstar> ", "...> "
// while an input is incomplete), Tab completion of Starlark names and
// attributes, commands and probe descriptions, and history kept in
// ~/.dstar_history. Ctrl-C clears the line at the prompt and, while code
// runs, ends a blocking call (run, sleep, wait_until, :run) or cancels the
// code; either way the REPL and its session go on. Ctrl-D or :quit ends
// the REPL and closes every session. Without a terminal the same input is
// read line by line with no prompts and no editing.
package repl
