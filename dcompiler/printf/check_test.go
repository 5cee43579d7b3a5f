package printf

import (
	"errors"
	"testing"
)

var (
	tInt    = ArgType{Class: ClassInt, Name: "int", Size: 4, Signed: true}
	tUint   = ArgType{Class: ClassInt, Name: "uint_t", Size: 4}
	tShort  = ArgType{Class: ClassInt, Name: "short", Size: 2, Signed: true}
	tUshort = ArgType{Class: ClassInt, Name: "ushort_t", Size: 2}
	tLong   = ArgType{Class: ClassInt, Name: "long", Size: 8, Signed: true}
	tU64    = ArgType{Class: ClassInt, Name: "uint64_t", Size: 8}
	tStr    = ArgType{Class: ClassString, Name: "string"}
	tChars  = ArgType{Class: ClassCharArray, Name: "char [16]"}
	tPtr    = ArgType{Class: ClassPointer, Name: "void *", Size: 8}
	tVoid   = ArgType{Class: ClassOther, Name: "void"}
	tStack  = ArgType{Class: ClassStack, Name: "stack"}
	tSym    = ArgType{Class: ClassSymAddr, Name: "_symaddr"}
	tUSym   = ArgType{Class: ClassUSymAddr, Name: "_usymaddr"}
)

func TestCheckOK(t *testing.T) {
	tests := []struct {
		format string
		args   []ArgType
	}{
		{"hello\n", nil},
		{"%d %i %u %x %X %o\n", []ArgType{tInt, tUint, tLong, tU64, tShort, tInt}},
		{"%s %s\n", []ArgType{tStr, tChars}},
		{"%c\n", []ArgType{tInt}},
		{"%p %p\n", []ArgType{tPtr, tU64}},
		{"%a %a %a\n", []ArgType{tPtr, tInt, tSym}},
		{"%A\n", []ArgType{tUSym}},
		{"%k\n", []ArgType{tStack}},
		{"%Y %T\n", []ArgType{tU64, tLong}},
		{"%hd %hu %hx\n", []ArgType{tShort, tUshort, tUshort}},
		{"%ld %lu %lx\n", []ArgType{tLong, tU64, tLong}},
		{"%*d %.*s\n", []ArgType{tInt, tLong, tInt, tStr}},
		{"%d %s\n", []ArgType{TypeInt, TypeString}},
		{"%p\n", []ArgType{TypePointer}},
		{"100%%\n", nil},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.format, err)
		}
		if err := f.Check("printf", tt.args); err != nil {
			t.Errorf("Check(%q): %v", tt.format, err)
		}
	}
}

// The messages are dt_printf_validate's; the dtrace-utils test whose .r file
// shows each one is named beside it.
func TestCheckErrors(t *testing.T) {
	tests := []struct {
		fn     string
		format string
		args   []ArgType
		tag    string
		msg    string
	}{
		// test/unittest/printf/err.D_PRINTF_ARG_PROTO.novalue.r
		{"printf", "%s\n", nil, "D_PRINTF_ARG_PROTO",
			"printf( ) prototype mismatch: conversion #1 (%s) is missing a corresponding value argument"},
		// test/unittest/printf/err.D_PRINTF_ARG_EXTRA.toomany.r
		{"printf", "%d %d\n", []ArgType{tInt, tInt, tInt}, "D_PRINTF_ARG_EXTRA",
			"printf( ) prototype mismatch: only 2 arguments required by this format string"},
		// test/unittest/printf/err.D_PRINTF_DYN_TYPE.badwidth.r
		{"printf", "%*d\n", []ArgType{tStr, tInt}, "D_PRINTF_DYN_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: % * d\n\t prototype: int\n\t  argument: string"},
		{"printf", "%.*s\n", []ArgType{tStr, tStr}, "D_PRINTF_DYN_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: % .* s\n\t prototype: int\n\t  argument: string"},
		// test/unittest/printf/err.D_PRINTF_ARG_TYPE.recursive.r
		{"printf", "%s\n", []ArgType{tVoid}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %s\n\t prototype: char [] or string (or use stringof)\n\t  argument: void"},
		{"printf", "%d %d\n", []ArgType{tInt, tStr}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #3 is incompatible with conversion #2 prototype:\n\tconversion: %d\n\t prototype: char, short, int, long, or long long\n\t  argument: string"},
		{"printf", "%d\n", []ArgType{tPtr}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %d\n\t prototype: char, short, int, long, or long long\n\t  argument: void *"},
		{"printf", "%c\n", []ArgType{tLong}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %c\n\t prototype: char, short, or int\n\t  argument: long"},
		{"printf", "%hd\n", []ArgType{tInt}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %hd\n\t prototype: short\n\t  argument: int"},
		{"printf", "%f\n", []ArgType{tInt}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %f\n\t prototype: float, double, or long double\n\t  argument: int"},
		{"printf", "%A\n", []ArgType{tPtr}, "D_PRINTF_ARG_TYPE",
			"printf( ) argument #2 is incompatible with conversion #1 prototype:\n\tconversion: %A\n\t prototype: pointer or integer (with -p/-c) or _usymaddr (without -p/-c)\n\t  argument: void *"},
		// test/unittest/printf/err.D_PRINTF_DYN_PROTO.nowidth.d and .noprec.d
		{"printf", "%*d\n", nil, "D_PRINTF_DYN_PROTO",
			"printf( ) prototype mismatch: conversion #1 (%d) is missing a corresponding \"*\" argument"},
		{"printf", "%d %.*s\n", []ArgType{tInt}, "D_PRINTF_DYN_PROTO",
			"printf( ) prototype mismatch: conversion #2 (%s) is missing a corresponding \".*\" argument"},
		// test/unittest/printf/err.D_PRINTF_AGG_CONV.aggfmt.d
		{"printf", "%@d\n", nil, "D_PRINTF_AGG_CONV",
			"%@ conversion requires an aggregation and is not for use with printf( )"},
		{"printf", "", nil, "D_PRINTF_FMT_EMPTY", "printf( ) format string is empty"},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.format, err)
		}
		err = f.Check(tt.fn, tt.args)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%q) = %v, want [%s] %q", tt.format, err, tt.tag, tt.msg)
			continue
		}
		if e.Tag != tt.tag || e.Msg != tt.msg {
			t.Errorf("Check(%q) = [%s] %q, want [%s] %q", tt.format, e.Tag, e.Msg, tt.tag, tt.msg)
		}
	}
}

func TestCheckPrinta(t *testing.T) {
	f, _ := Parse("%-20s %@d\n")
	if err := f.Check("printa", []ArgType{tStr}); err != nil {
		t.Errorf("printa: %v", err)
	}
	// printa may print fewer keys than the aggregation has.
	g, _ := Parse("%@d\n")
	if err := g.Check("printa", []ArgType{tStr, tInt}); err != nil {
		t.Errorf("printa with unused keys: %v", err)
	}
	// %@s wants a string, but the aggregation's value is an int64_t.
	h, _ := Parse("%@s\n")
	err := h.Check("printa", nil)
	want := "printa( ) aggregating action is incompatible with conversion #1 prototype:\n\tconversion: %s\n\t prototype: char [] or string (or use stringof)\n\t  argument: int64_t"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestCheckTarget(t *testing.T) {
	f, _ := Parse("%A\n")
	if err := f.CheckWith(CheckOptions{Func: "printf", Target: true}, []ArgType{tPtr}); err != nil {
		t.Errorf("%%A with -p: %v", err)
	}
}
