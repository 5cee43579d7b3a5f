// This file holds the dictionary of conversions DTrace accepts, with the
// prototype text it names in type errors (libdtrace dt_printf.c).

package printf

// Kind is what a conversion expects as its value.
type Kind int

// The kinds of conversion.
const (
	ArgNone       Kind = iota // %%: consumes no value
	ArgInt                    // %d %i %o %u %x %X and their h/l/ll forms
	ArgChar                   // %c %C %lc %wc
	ArgString                 // %s %S
	ArgPointer                // %p
	ArgFloat                  // %e %E %f %g %G and their L forms
	ArgSymbol                 // %a: a kernel address, printed as symbol+offset
	ArgUserSymbol             // %A: a user address, printed as symbol+offset
	ArgStack                  // %k: a stack() or ustack() value
	ArgTime                   // %Y and %T: nanoseconds since the epoch
	ArgWideString             // %ls %ws
)

var kindNames = [...]string{"none", "int", "char", "string", "pointer", "float",
	"symbol", "user symbol", "stack", "time", "wide string"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// check says which of DTrace's pfcheck_* rules applies to a conversion.
type check int

const (
	chkNone      check = iota // %%
	chkAddr                   // pointer or integer
	chkKAddr                  // pointer, integer or kernel symbol address
	chkUAddr                  // user symbol address; pointer or integer with -p/-c
	chkStack                  // stack() or ustack()
	chkTime                   // 64-bit integer
	chkStr                    // string or char array
	chkWStr                   // wchar_t array
	chkCSI                    // integer of at most 4 bytes
	chkFP                     // floating point
	chkXInt                   // any integer
	chkDInt                   // any integer; its signedness picks %d or %u
	chkXShort                 // short of either signedness
	chkXLong                  // long of either signedness
	chkXLongLong              // long long, int64_t or uint64_t
	chkType                   // exactly the prototype type
)

// dictEntry is one conversion of the dictionary.
type dictEntry struct {
	verb  byte   // the C conversion that prints it ('s' for DTrace's own)
	kind  Kind   // what value it wants
	proto string // the prototype named in type errors
	check check
	// For chkType: the integer or float the prototype names.
	size   int
	signed bool
}

const (
	protoXInt  = "char, short, int, long, or long long"
	protoCSI   = "char, short, or int"
	protoFP    = "float, double, or long double"
	protoAddr  = "pointer or integer"
	protoUAddr = "pointer or integer (with -p/-c) or _usymaddr (without -p/-c)"
	protoCStr  = "char [] or string (or use stringof)"
	protoWStr  = "wchar_t []"
)

// dict is DTrace's conversion dictionary, keyed by conversion name.
var dict = map[string]dictEntry{
	"a":   {'s', ArgSymbol, protoAddr, chkKAddr, 0, false},
	"A":   {'s', ArgUserSymbol, protoUAddr, chkUAddr, 0, false},
	"c":   {'c', ArgChar, protoCSI, chkCSI, 0, false},
	"C":   {'s', ArgChar, protoCSI, chkCSI, 0, false},
	"d":   {'d', ArgInt, protoXInt, chkDInt, 0, false},
	"e":   {'e', ArgFloat, protoFP, chkFP, 0, false},
	"E":   {'E', ArgFloat, protoFP, chkFP, 0, false},
	"f":   {'f', ArgFloat, protoFP, chkFP, 0, false},
	"g":   {'g', ArgFloat, protoFP, chkFP, 0, false},
	"G":   {'G', ArgFloat, protoFP, chkFP, 0, false},
	"hd":  {'d', ArgInt, "short", chkType, 2, true},
	"hi":  {'i', ArgInt, "short", chkType, 2, true},
	"ho":  {'o', ArgInt, "unsigned short", chkType, 2, false},
	"hu":  {'u', ArgInt, "unsigned short", chkType, 2, false},
	"hx":  {'x', ArgInt, "short", chkXShort, 0, false},
	"hX":  {'X', ArgInt, "short", chkXShort, 0, false},
	"i":   {'i', ArgInt, protoXInt, chkDInt, 0, false},
	"k":   {'s', ArgStack, "stack", chkStack, 0, false},
	"lc":  {'c', ArgChar, "int", chkType, 4, true},
	"ld":  {'d', ArgInt, "long", chkType, 8, true},
	"li":  {'i', ArgInt, "long", chkType, 8, true},
	"lo":  {'o', ArgInt, "unsigned long", chkType, 8, false},
	"lu":  {'u', ArgInt, "unsigned long", chkType, 8, false},
	"ls":  {'s', ArgWideString, protoWStr, chkWStr, 0, false},
	"lx":  {'x', ArgInt, "long", chkXLong, 0, false},
	"lX":  {'X', ArgInt, "long", chkXLong, 0, false},
	"lld": {'d', ArgInt, "long long", chkType, 8, true},
	"lli": {'i', ArgInt, "long long", chkType, 8, true},
	"llo": {'o', ArgInt, "unsigned long long", chkType, 8, false},
	"llu": {'u', ArgInt, "unsigned long long", chkType, 8, false},
	"llx": {'x', ArgInt, "long long", chkXLongLong, 0, false},
	"llX": {'X', ArgInt, "long long", chkXLongLong, 0, false},
	"Le":  {'e', ArgFloat, "long double", chkType, 16, true},
	"LE":  {'E', ArgFloat, "long double", chkType, 16, true},
	"Lf":  {'f', ArgFloat, "long double", chkType, 16, true},
	"Lg":  {'g', ArgFloat, "long double", chkType, 16, true},
	"LG":  {'G', ArgFloat, "long double", chkType, 16, true},
	"o":   {'o', ArgInt, protoXInt, chkXInt, 0, false},
	"p":   {'x', ArgPointer, protoAddr, chkAddr, 0, false},
	"s":   {'s', ArgString, protoCStr, chkStr, 0, false},
	"S":   {'s', ArgString, protoCStr, chkStr, 0, false},
	"T":   {'s', ArgTime, "int64_t", chkTime, 0, false},
	"u":   {'u', ArgInt, protoXInt, chkXInt, 0, false},
	"wc":  {'c', ArgChar, "int", chkType, 4, true},
	"ws":  {'s', ArgWideString, protoWStr, chkWStr, 0, false},
	"x":   {'x', ArgInt, protoXInt, chkXInt, 0, false},
	"X":   {'X', ArgInt, protoXInt, chkXInt, 0, false},
	"Y":   {'s', ArgTime, "int64_t", chkTime, 0, false},
	"%":   {'%', ArgNone, "void", chkNone, 0, false},
}
