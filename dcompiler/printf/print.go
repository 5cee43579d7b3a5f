// This file formats recorded values with a parsed Format, as libdtrace's
// dt_printf_format does at run time.

package printf

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// StackIndent is how far dtrace(1) indents each frame of a stack, in
// stack( ) output and in %k.
const StackIndent = 14

// timeLocation is the zone %Y and %T print in: the local one, as DTrace
// does. Tests replace it.
var timeLocation = time.Local

// Sprint formats args with the format. If the values do not fit the format
// (too few, for example), it formats what it can; use Fprint to learn of it.
func (f *Format) Sprint(args []Value) string {
	b, _ := f.Append(nil, args, nil)
	return string(b)
}

// Fprint writes the formatted args to w. It returns ErrMismatch if the
// values do not fit the format, or the writer's error.
func (f *Format) Fprint(w io.Writer, args []Value) error {
	return f.FprintAgg(w, args, nil)
}

// FprintAgg is Fprint for printa(): the %@ conversions print the
// aggregation values agg in order, the last one again if there are more %@
// than values, as DTrace does; args are the key values the other
// conversions print.
func (f *Format) FprintAgg(w io.Writer, args, agg []Value) error {
	b, err := f.Append(nil, args, agg)
	if _, werr := w.Write(b); werr != nil {
		return werr
	}
	return err
}

// Append appends the formatted values to dst. agg are the aggregation values
// for %@ conversions (printa only).
func (f *Format) Append(dst []byte, args, agg []Value) ([]byte, error) {
	var err error
	next := func() (Value, bool) {
		if len(args) == 0 {
			err = ErrMismatch
			return Value{}, false
		}
		v := args[0]
		args = args[1:]
		return v, true
	}
	curagg := 0
	for _, seg := range f.Segments {
		dst = append(dst, seg.Literal...)
		c := seg.Conv
		if c == nil {
			continue
		}
		if c.Kind == ArgNone {
			dst = append(dst, '%')
			continue
		}
		sp := spec{left: c.Left, plus: c.Plus, space: c.Space, alt: c.Alt, zero: c.Zero,
			width: c.Width, prec: c.Prec}
		if c.DynWidth {
			v, ok := next()
			if !ok {
				return dst, err
			}
			sp.width = int(int32(v.Int64()))
		}
		if c.DynPrec {
			v, ok := next()
			if !ok {
				return dst, err
			}
			sp.prec = int(int32(v.Int64()))
		}
		if sp.width < 0 {
			sp.left, sp.width = true, -sp.width
		}
		sp.width = min(sp.width, maxField)
		if sp.prec <= 0 {
			sp.prec = -1 // DTrace passes a precision only when it is > 0
		}
		sp.prec = min(sp.prec, maxField)

		var v Value
		if c.Agg {
			if len(agg) == 0 {
				return dst, ErrMismatch
			}
			v = agg[curagg]
			if curagg < len(agg)-1 {
				curagg++
			}
			if v.Kind == TableValue {
				dst = append(dst, v.Str...)
				continue
			}
		} else {
			var ok bool
			if v, ok = next(); !ok {
				return dst, err
			}
		}
		dst = c.format(dst, &sp, v)
	}
	return dst, err
}

// format appends one value formatted by the conversion.
func (c *Conversion) format(dst []byte, sp *spec, v Value) []byte {
	switch c.Kind {
	case ArgInt, ArgPointer:
		if v.Kind == FloatValue {
			v = Int(int64(v.Float))
		}
		verb := c.verb
		signed := false
		switch c.dict.check {
		case chkDInt:
			// DTrace rewrites %d of an unsigned type into %u.
			signed = v.Signed
			if !signed {
				verb = 'u'
			}
		case chkType:
			signed = c.dict.signed
		}
		if signed {
			n := v.Int64()
			mag := uint64(n)
			if n < 0 {
				mag = -mag
			}
			return sp.appendInt(dst, verb, n < 0, mag)
		}
		if verb == 'd' || verb == 'i' {
			verb = 'u'
		}
		return sp.appendInt(dst, verb, false, v.Uint64())
	case ArgChar:
		n := v.Int64()
		if v.Kind == StringValue && v.Str != "" {
			n = int64(v.Str[0])
		}
		switch c.Name {
		case "C":
			return sp.appendString(dst, escape(string([]byte{byte(n)})))
		case "lc", "wc":
			return sp.pad(dst, string(rune(int32(n))))
		}
		return sp.appendChar(dst, byte(n))
	case ArgString, ArgWideString:
		s := v.String()
		if c.Name == "S" {
			s = escape(s)
		}
		return sp.appendString(dst, s)
	case ArgFloat:
		fv := v.Float
		if v.Kind == IntValue {
			fv = float64(v.Int64())
		}
		return sp.appendFloat(dst, c.verb, fv)
	case ArgSymbol, ArgUserSymbol, ArgStack:
		if v.Kind == StackValue {
			// As dtrace's stack( ) output: a newline, then each frame on
			// a line of its own, indented, in the conversion's width.
			dst = append(dst, '\n')
			for _, f := range v.Frames {
				dst = append(dst, strings.Repeat(" ", StackIndent)...)
				dst = sp.appendString(dst, f)
				dst = append(dst, '\n')
			}
			return dst
		}
		if v.Kind == IntValue {
			// The consumer resolves addresses to symbols and passes
			// strings; an unresolved address prints as DTrace prints
			// one it cannot name.
			return sp.appendString(dst, "0x"+strconv.FormatUint(v.Uint64(), 16))
		}
		return sp.appendString(dst, v.String())
	case ArgTime:
		if v.Kind != IntValue {
			return sp.appendString(dst, v.String())
		}
		t := time.Unix(v.Int64()/1e9, 0).In(timeLocation)
		if c.Name == "Y" {
			return sp.appendString(dst, t.Format("2006 Jan _2 15:04:05"))
		}
		year, _ := t.ISOWeek() // strftime's %G
		return sp.appendString(dst, t.Format("Mon, 02 Jan ")+strconv.Itoa(year)+t.Format(" 15:04:05 MST"))
	}
	return dst
}

// escape returns s with unprintable and special characters written as C
// escape sequences, as DTrace's %S and %C show them (strchr2esc).
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case 0:
			b.WriteString(`\0`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case ' ':
			b.WriteByte(' ')
		default:
			if c < '!' || c > '~' {
				b.WriteByte('\\')
				o := strconv.FormatUint(uint64(c), 8)
				b.WriteString(strings.Repeat("0", 3-len(o)) + o)
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}
