/*
 * faults.d: the fault codes the ERROR probe passes in arg4, with the
 * values of DTrace's DTRACEFLT_* (Oracle's adds DTRACEFLT_BADINDEX).
 * dstar loads this file before every program.
 */

inline int DTRACEFLT_UNKNOWN = 0;	/* a fault of no known kind */
inline int DTRACEFLT_BADADDR = 1;	/* invalid address */
inline int DTRACEFLT_BADALIGN = 2;	/* invalid alignment */
inline int DTRACEFLT_ILLOP = 3;		/* illegal operation */
inline int DTRACEFLT_DIVZERO = 4;	/* divide-by-zero */
inline int DTRACEFLT_NOSCRATCH = 5;	/* out of scratch space */
inline int DTRACEFLT_KPRIV = 6;		/* invalid kernel access */
inline int DTRACEFLT_UPRIV = 7;		/* invalid user access */
inline int DTRACEFLT_TUPOFLOW = 8;	/* tuple stack overflow */
inline int DTRACEFLT_BADSTACK = 9;	/* bad stack */
inline int DTRACEFLT_BADSIZE = 10;	/* invalid size */
inline int DTRACEFLT_BADINDEX = 11;	/* index out of bounds */
inline int DTRACEFLT_LIBRARY = 1000;	/* a library action failed */
