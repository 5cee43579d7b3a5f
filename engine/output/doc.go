// Package output lays out what the consumer prints, byte for byte as DTrace
// prints it: the probe line that precedes a clause's records when not in
// quiet mode, trace()'s fields, aggregations and their quantize tables, the
// -l listing, and the one-line messages dtrace writes to stderr.
//
// The reference is Oracle's DTrace for Linux (dtrace-utils: cmd/dtrace.c,
// libdtrace/dt_consume.c, dt_aggregate.c, dt_handle.c), which agrees with
// illumos everywhere except trace()'s integer widths, llquantize() (which
// dtrace-utils extended to negative values) and stddev() of a normalized
// aggregation; MESSAGES.md beside this file records the differences. The
// package does no I/O beyond the writer it is given and knows nothing of
// BPF: the engine reads records and aggregation maps and hands their values
// here.
//
// How the pieces fit, for a clause that fires (not quiet):
//
//	ProbeHeader()            once, before the first probe line
//	ProbeLine(cpu, id, f, n) before each firing's records
//	Trace(v, quiet)          for each trace() record
//	"\n"                     after the firing's last record, unless quiet
//
// A clause with no data-recording action at all (only aggregations, say)
// prints nothing, not even its probe line. At exit dtrace prints one "\n",
// quiet or not, and then every aggregation not yet printed (WriteFinal).
package output
