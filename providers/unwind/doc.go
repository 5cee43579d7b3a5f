// Package unwind walks user stacks in BPF with the unwind tables of
// package cfi: the walker's BPF code (one bpf_loop callback, a frame per
// iteration), the maps it reads, and the Go side that fills them from the
// files a traced process maps.
//
// The maps:
//
//   - Mappings, an LPM trie keyed by (pid, run-time address) — a
//     mapping's range split into prefixes — whose value is the load bias
//     and where the mapped file's rows are in Rows (first, count); a count
//     of 0 is a file without call-frame information, walked by frame
//     pointers.
//   - Rows, one array of every loaded file's rows (16 bytes each), a
//     file's rows contiguous and sorted, shared by every process that maps
//     the file.
//   - Stops, per-CPU counters of why walks ended.
//   - Pids, the processes whose mappings the walks have asked user space
//     for (an "unknown pid" notice), and the time before which they are
//     not asked for again.
//
// A walk starts from a Walk record (the registers, the pid, the frames
// wanted) in a map value; the callback steps one frame per call: it finds
// the mapping, binary-searches the file's rows (at most 2^20 of them, 20
// steps), computes the CFA, reads the return address and the saved frame
// pointer with bpf_probe_read_user, and appends the PC to the record's
// frames. It stops at the end of the stack (an undefined return address,
// a zero PC) or, when it cannot go on (no mapping, no rule, a word it
// cannot read), after appending a marker frame (cfi.Marker) that says why
// — never a guessed frame.
package unwind
