// Package engine runs compiled D programs against the kernel.
//
// A Session holds any number of Enablings — compiled programs that are
// loaded, attached and producing records — and can add or remove them while
// it runs. For each Enabling the engine loads its maps and programs, asks
// the providers to attach them, fires BEGIN before any other probe may fire
// (probes are gated on a flag in the program's globals), consumes its ring
// buffer, reports faults and drops, fires END after the other probes are
// gated off again, reads and merges its per-CPU aggregations, and releases
// every kernel object when it is closed.
package engine
