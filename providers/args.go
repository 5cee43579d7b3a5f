package providers

import (
	"strings"

	"github.com/dstar-trace/dstar/providers/tracefs"
)

// fieldArg turns a tracepoint format field into an args->field argument.
func fieldArg(f *tracefs.Field) Arg {
	a := Arg{Name: f.Name, Type: f.Type, Offset: f.Offset, Size: f.Size, Signed: f.Signed}
	switch {
	case f.DataLoc:
		a.Kind = ArgDataLoc
	case f.RelLoc:
		a.Kind = ArgRelLoc
	case f.IsArray():
		a.Kind = ArgArray
		a.Len = f.ArrayLen
	case f.Pointer:
		a.Kind = ArgPointer
	case isIntSize(f.Size):
		a.Kind = ArgInt
	default:
		a.Kind = ArgArray // an inline struct or odd-sized field: bytes
	}
	return a
}

func isIntSize(n int) bool { return n == 1 || n == 2 || n == 4 || n == 8 }

// isScalar reports whether a is a value that fits a u64 argument slot.
func isScalar(a *Arg) bool {
	return (a.Kind == ArgInt || a.Kind == ArgPointer) && a.Size >= 1 && a.Size <= 8
}

// positionalArg types a syscall argument from the C type the kernel's
// format gives it. The tracepoint stores every argument as a full register,
// so the format's size and sign say nothing; the C type does.
func positionalArg(ctype string) Arg {
	t := strings.TrimSpace(ctype)
	for _, q := range []string{"const ", "volatile "} {
		t = strings.TrimPrefix(t, q)
	}
	if strings.HasSuffix(t, "*") || pointerTypedefs[t] {
		return Arg{Type: ctype, Kind: ArgPointer, Size: 8}
	}
	if ct, ok := cTypes[t]; ok {
		return Arg{Type: ctype, Kind: ArgInt, Size: ct.size, Signed: ct.signed}
	}
	if strings.HasPrefix(t, "enum ") {
		return Arg{Type: ctype, Kind: ArgInt, Size: 4}
	}
	return Arg{Type: ctype, Kind: ArgInt, Size: 8}
}

type cType struct {
	size   int
	signed bool
}

// cTypes are the integer types and kernel typedefs syscall arguments use.
var cTypes = map[string]cType{
	"char": {1, true}, "signed char": {1, true}, "unsigned char": {1, false},
	"u8": {1, false}, "__u8": {1, false}, "s8": {1, true}, "__s8": {1, true},
	"short": {2, true}, "unsigned short": {2, false}, "u16": {2, false},
	"__u16": {2, false}, "s16": {2, true}, "__s16": {2, true}, "umode_t": {2, false},
	"int": {4, true}, "s32": {4, true}, "__s32": {4, true}, "pid_t": {4, true},
	"clockid_t": {4, true}, "timer_t": {4, true}, "mqd_t": {4, true},
	"key_t": {4, true}, "key_serial_t": {4, true}, "rwf_t": {4, true},
	"unsigned int": {4, false}, "unsigned": {4, false}, "u32": {4, false},
	"__u32": {4, false}, "uid_t": {4, false}, "gid_t": {4, false}, "qid_t": {4, false},
	"long": {8, true}, "long long": {8, true}, "s64": {8, true}, "__s64": {8, true},
	"loff_t": {8, true}, "off_t": {8, true}, "ssize_t": {8, true},
	"unsigned long": {8, false}, "unsigned long long": {8, false}, "u64": {8, false},
	"__u64": {8, false}, "size_t": {8, false}, "aio_context_t": {8, false},
}

// pointerTypedefs are typedefs for pointer types.
var pointerTypedefs = map[string]bool{"cap_user_header_t": true, "cap_user_data_t": true}
