package stapsdt

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// ArgKind says where an argument's value is at the probe site.
type ArgKind int

const (
	// Unsupported is an operand dstar cannot evaluate (Err says why).
	Unsupported ArgKind = iota
	// Reg is the value of register Reg.
	Reg
	// Imm is the constant Offset.
	Imm
	// Mem is the Size bytes at Reg + Index*Scale + Offset in the process's
	// memory (Reg and Index may be empty), or, when Symbol is set, at
	// Offset past the variable Symbol (Reg is then "rip").
	Mem
)

// Arg is one decoded argument.
type Arg struct {
	Spec   string // as written in the note: "-4@%edi"
	Size   int    // bytes: 1, 2, 4 or 8
	Signed bool
	Kind   ArgKind
	Reg    string // register name as the assembler spells it, without '%'
	Index  string // index register of a Mem operand, or ""
	Scale  int    // of Index
	Offset int64  // displacement (Mem) or value (Imm)
	Symbol string // a Mem operand "sym+Offset(%rip)": the variable sym
	Err    string // why Kind is Unsupported
}

// ParseArgs decodes a note's argument string, which is a space-separated
// list of SIZE@OPERAND: SIZE is the byte size, negative for a signed value;
// OPERAND is an assembler operand of the file's machine (on x86 "%reg",
// "$imm", "disp(%base,%index,scale)"; on arm64 "reg", "imm", "[reg, off]").
// Operands it cannot evaluate (a symbol's address, say) come back as
// Unsupported args with the reason, so that one odd argument does not cost
// the probe.
func ParseArgs(spec string, m elf.Machine) []Arg {
	var out []Arg
	for _, tok := range splitArgs(spec) {
		out = append(out, parseArg(tok, m))
	}
	return out
}

// splitArgs splits at spaces outside brackets (arm64's "[sp, 16]" has one).
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || (s[i] == ' ' || s[i] == '\t') && depth == 0 {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

func parseArg(tok string, m elf.Machine) Arg {
	a := Arg{Spec: tok, Size: 8}
	op := tok
	if at := strings.IndexByte(tok, '@'); at >= 0 {
		n, err := strconv.Atoi(tok[:at])
		if err != nil {
			return unsupported(a, "bad size %q", tok[:at])
		}
		a.Signed = n < 0
		if n < 0 {
			n = -n
		}
		if n != 1 && n != 2 && n != 4 && n != 8 {
			return unsupported(a, "bad size %d", n)
		}
		a.Size, op = n, tok[at+1:]
	}
	if op == "" {
		return unsupported(a, "empty operand")
	}
	switch m {
	case elf.EM_X86_64, elf.EM_386:
		return parseX86(a, op)
	case elf.EM_AARCH64:
		return parseARM64(a, op)
	}
	return unsupported(a, "operands of %v are not supported", m)
}

func unsupported(a Arg, format string, args ...any) Arg {
	a.Kind = Unsupported
	a.Err = fmt.Sprintf(format, args...)
	return a
}

// parseX86 decodes an AT&T-syntax operand.
func parseX86(a Arg, op string) Arg {
	switch op[0] {
	case '%':
		if !isIdent(op[1:]) {
			return unsupported(a, "bad register %q", op)
		}
		a.Kind, a.Reg = Reg, op[1:]
		return a
	case '$':
		v, err := parseInt(op[1:])
		if err != nil {
			return unsupported(a, "immediate %q is not a number", op)
		}
		a.Kind, a.Offset = Imm, v
		return a
	}
	a.Kind = Mem
	disp := op
	if lp := strings.IndexByte(op, '('); lp >= 0 {
		if !strings.HasSuffix(op, ")") {
			return unsupported(a, "bad memory operand %q", op)
		}
		disp = op[:lp]
		parts := strings.Split(op[lp+1:len(op)-1], ",")
		if len(parts) > 3 {
			return unsupported(a, "bad memory operand %q", op)
		}
		regName := func(s string) (string, bool) {
			s = strings.TrimSpace(s)
			if s == "" {
				return "", true
			}
			r, ok := strings.CutPrefix(s, "%")
			return r, ok && isIdent(r)
		}
		var ok bool
		if a.Reg, ok = regName(parts[0]); !ok {
			return unsupported(a, "bad base register in %q", op)
		}
		if len(parts) > 1 {
			if a.Index, ok = regName(parts[1]); !ok {
				return unsupported(a, "bad index register in %q", op)
			}
			a.Scale = 1
		}
		if len(parts) > 2 {
			s, err := strconv.Atoi(strings.TrimSpace(parts[2]))
			if err != nil || s != 1 && s != 2 && s != 4 && s != 8 {
				return unsupported(a, "bad scale in %q", op)
			}
			a.Scale = s
		}
	}
	rip := a.Reg == "rip"
	if disp != "" {
		v, err := parseInt(disp)
		if err == nil {
			a.Offset = v
		} else if sym, off, ok := symbolDisp(disp); ok && rip && a.Index == "" {
			// "counter(%rip)": the variable counter. Where it is depends
			// on where the file is loaded; the consumer resolves Symbol.
			a.Symbol, a.Offset = sym, off
			return a
		} else {
			return unsupported(a, "symbolic operand %q", op)
		}
	}
	if rip || a.Reg == "eip" {
		return unsupported(a, "instruction-pointer-relative operand %q", op)
	}
	return a
}

// symbolDisp splits "sym", "sym+8" or "sym-8" into the symbol and offset.
func symbolDisp(s string) (string, int64, bool) {
	i := strings.IndexAny(s, "+-")
	if i < 0 {
		return s, 0, isSymbol(s)
	}
	off, err := parseInt(s[i:])
	return s[:i], off, err == nil && isSymbol(s[:i])
}

// isSymbol reports whether s is a plain symbol name (not "x@GOTPCREL").
func isSymbol(s string) bool {
	return isIdent(strings.ReplaceAll(s, ".", "_")) && (s[0] < '0' || s[0] > '9')
}

// parseARM64 decodes an arm64 operand: "x0", "5", "[x29, -8]", "[sp]".
func parseARM64(a Arg, op string) Arg {
	if inner, ok := strings.CutPrefix(op, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return unsupported(a, "bad memory operand %q", op)
		}
		base, off, hasOff := strings.Cut(inner, ",")
		base = strings.TrimSpace(base)
		if !isIdent(base) {
			return unsupported(a, "bad base register in %q", op)
		}
		a.Kind, a.Reg = Mem, base
		if hasOff {
			v, err := parseInt(strings.TrimPrefix(strings.TrimSpace(off), "#"))
			if err != nil {
				return unsupported(a, "bad offset in %q", op)
			}
			a.Offset = v
		}
		return a
	}
	if v, err := parseInt(strings.TrimPrefix(op, "#")); err == nil {
		a.Kind, a.Offset = Imm, v
		return a
	}
	if isIdent(op) {
		a.Kind, a.Reg = Reg, op
		return a
	}
	return unsupported(a, "bad operand %q", op)
}

// parseInt reads a decimal or 0x-hex integer with an optional sign.
func parseInt(s string) (int64, error) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	u, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
