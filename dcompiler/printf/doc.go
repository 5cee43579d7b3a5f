// Package printf implements DTrace's printf format strings: the ones given to
// printf(), printa(), system() and freopen().
//
// A format is parsed once, at compile time, by Parse. Parsing follows
// libdtrace's dt_printf_create: every '%' starts a conversion (so "%%" counts
// as conversion #N too), flags are "-+ #0'" plus DTrace's "?" (pointer-width
// field) and "@" (the aggregation's value, printa only), width and precision
// may be "*", and the length modifiers h, l, ll, L and w are part of the
// conversion's name. The conversion names are exactly those of DTrace's
// dictionary (%a %A %c %C %d %e %E %f %g %G %hd ... %Y %%); anything else is
// an error worded as DTrace words it ("format conversion #1 is undefined:
// %y"). DTrace does not accept the C99 modifiers hh, z, j and t, and neither
// does this package.
//
// The caller that knows the argument types checks them with Check or
// CheckWith, which report DTrace's D_PRINTF_* messages. At run time,
// Format.Fprint formats recorded values with C's printf semantics — not Go's
// fmt — including DTrace's own rules: a precision of 0 is ignored, %p prints
// bare hexadecimal, %d of an unsigned value prints it unsigned, and an integer
// is truncated to its recorded size before it is printed.
//
// Errors are *Error values carrying the DTrace error tag (D_SYNTAX,
// D_PRINTF_ARG_TYPE, ...) and the message without any "line N:" prefix; the
// compiler adds the position.
package printf
