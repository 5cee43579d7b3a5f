// This file checks a format's conversions against the types of the
// arguments, as libdtrace's dt_printf_validate does, with its messages.

package printf

import "strconv"

// Class is the broad class of an argument's D type, as far as printf
// conversions care.
type Class int

// The classes of argument type.
const (
	ClassOther      Class = iota
	ClassInt              // integers, enums and chars
	ClassFloat            // float, double, long double
	ClassPointer          // pointers
	ClassString           // D's string
	ClassCharArray        // char [N]
	ClassWCharArray       // wchar_t [N]
	ClassStack            // the result of stack() or ustack()
	ClassSymAddr          // a kernel symbol address (sym(), func(), mod())
	ClassUSymAddr         // a user symbol address (usym(), ufunc(), umod())
)

// ArgType describes one argument's D type.
type ArgType struct {
	Class Class
	// Name is the type as DTrace names it in messages: "int",
	// "uint64_t", "string", "char [16]", "void".
	Name string
	// Size is the size in bytes of an integer or float; 0 means unknown,
	// and then size rules (%c wants at most an int, %Y a 64-bit integer)
	// are not enforced.
	Size int
	// Signed says whether an integer type is signed.
	Signed bool
}

// Generic argument types, for callers that know no more than the class.
var (
	TypeInt     = ArgType{Class: ClassInt, Name: "int", Signed: true}
	TypeString  = ArgType{Class: ClassString, Name: "string"}
	TypePointer = ArgType{Class: ClassPointer, Name: "void *", Size: 8}
)

// CheckOptions says how a format is used.
type CheckOptions struct {
	// Func is the action's name: "printf", "printa", "system", "freopen".
	Func string
	// FirstArg is the argument number of the first value in the messages'
	// "argument #N": the format itself is argument #1, so values start at
	// 2, the default when FirstArg is 0.
	FirstArg int
	// ExactLen rejects extra arguments (printf, system, freopen).
	ExactLen bool
	// Aggregation allows %@ (printa).
	Aggregation bool
	// AggCount says the aggregation is a count(), whose value is a
	// uint64_t; other aggregations' values are int64_t.
	AggCount bool
	// Target says a process was given with -p or -c, which lets %A take a
	// plain pointer or integer.
	Target bool
}

// Check checks args against the format as the action fn uses it: printa
// allows %@; printf, system and freopen reject extra arguments.
func (f *Format) Check(fn string, args []ArgType) error {
	return f.CheckWith(CheckOptions{
		Func:        fn,
		ExactLen:    fn != "printa",
		Aggregation: fn == "printa",
	}, args)
}

// CheckWith checks args against the format. Its errors are *Error values
// with DTrace's D_PRINTF_* tags and messages.
func (f *Format) CheckWith(o CheckOptions, args []ArgType) error {
	fn := o.Func
	foff := o.FirstArg
	if foff == 0 {
		foff = 2
	}
	if f.Text == "" && fn != "freopen" { // freopen("") restores the output
		return errorf("D_PRINTF_FMT_EMPTY", "%s( ) format string is empty", fn)
	}
	j := 0 // arguments consumed
	for _, c := range f.Conversions() {
		if c.Kind == ArgNone {
			continue
		}
		for _, dyn := range []struct {
			set  bool
			name string
		}{{c.DynWidth, "*"}, {c.DynPrec, ".*"}} {
			if !dyn.set {
				continue
			}
			if j >= len(args) {
				return errorf("D_PRINTF_DYN_PROTO", "%s( ) prototype mismatch: conversion #%d (%%%s) is missing a corresponding \"%s\" argument",
					fn, c.Index, c.Name, dyn.name)
			}
			if args[j].Class != ClassInt {
				return errorf("D_PRINTF_DYN_TYPE", "%s( ) argument #%d is incompatible with conversion #%d prototype:\n\tconversion: %% %s %s\n\t prototype: int\n\t  argument: %s",
					fn, j+foff, c.Index, dyn.name, c.Name, args[j].Name)
			}
			j++
		}
		var vname string
		var t ArgType
		switch {
		case c.Agg:
			if !o.Aggregation {
				return errorf("D_PRINTF_AGG_CONV", "%%@ conversion requires an aggregation and is not for use with %s( )", fn)
			}
			vname = "aggregating action"
			t = ArgType{Class: ClassInt, Name: "int64_t", Size: 8, Signed: true}
			if o.AggCount {
				t = ArgType{Class: ClassInt, Name: "uint64_t", Size: 8}
			}
		case j >= len(args):
			return errorf("D_PRINTF_ARG_PROTO", "%s( ) prototype mismatch: conversion #%d (%%%s) is missing a corresponding value argument",
				fn, c.Index, c.Name)
		default:
			vname = "argument #" + strconv.Itoa(j+foff)
			t = args[j]
			j++
		}
		if !c.accepts(t, o.Target) {
			return errorf("D_PRINTF_ARG_TYPE", "%s( ) %s is incompatible with conversion #%d prototype:\n\tconversion: %%%s\n\t prototype: %s\n\t  argument: %s",
				fn, vname, c.Index, c.Name, c.Proto, t.Name)
		}
	}
	if o.ExactLen && j < len(args) {
		return errorf("D_PRINTF_ARG_EXTRA", "%s( ) prototype mismatch: only %d arguments required by this format string", fn, j)
	}
	return nil
}

// accepts reports whether a value of type t may be printed by c.
//
// DTrace's rules for the explicitly sized conversions compare CTF types: %hx
// wants a type named short, %lx one named long, %llx long long or a typedef
// of int64_t, and %hd, %ld, %lld and the like a type compatible with their
// prototype. Without CTF names these are approximated by size and
// signedness.
func (c *Conversion) accepts(t ArgType, target bool) bool {
	isInt := t.Class == ClassInt
	sizeIs := func(n int) bool { return t.Size == 0 || t.Size == n }
	switch c.dict.check {
	case chkAddr:
		return isInt || t.Class == ClassPointer
	case chkKAddr:
		return isInt || t.Class == ClassPointer || t.Class == ClassSymAddr
	case chkUAddr:
		return t.Class == ClassUSymAddr || target && (isInt || t.Class == ClassPointer)
	case chkStack:
		return t.Class == ClassStack
	case chkTime:
		return isInt && sizeIs(8)
	case chkStr:
		return t.Class == ClassString || t.Class == ClassCharArray
	case chkWStr:
		return t.Class == ClassWCharArray
	case chkCSI:
		return isInt && t.Size <= 4
	case chkFP:
		return t.Class == ClassFloat
	case chkXInt, chkDInt:
		return isInt
	case chkXShort:
		return isInt && sizeIs(2)
	case chkXLong, chkXLongLong:
		return isInt && sizeIs(8)
	case chkType:
		if c.Kind == ArgFloat {
			return t.Class == ClassFloat && sizeIs(c.dict.size)
		}
		return isInt && sizeIs(c.dict.size) && (t.Size == 0 || t.Signed == c.dict.signed)
	}
	return true
}
