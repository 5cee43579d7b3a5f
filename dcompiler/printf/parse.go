// This file defines Format and Conversion and parses format strings into
// them, with the same state machine and the same errors as libdtrace's
// dt_printf_create.

package printf

import "strings"

// Format is a parsed format string: literal text and conversions, in order.
type Format struct {
	// Text is the format string as written.
	Text string
	// Segments alternate text and conversions: each is a literal prefix
	// followed by a conversion, except that the last one may have no
	// conversion (the text after the last conversion).
	Segments []Segment
}

// Segment is literal text followed by a conversion (Conv may be nil for the
// text after the last conversion).
type Segment struct {
	Literal string
	Conv    *Conversion
}

// Conversion is one %-directive.
type Conversion struct {
	// Index is the conversion's number as DTrace counts them in messages:
	// every '%' is one, "%%" included, starting at 1.
	Index int
	// Name is the conversion's name in DTrace's dictionary: "d", "llx",
	// "s", "%", ... It is what DTrace shows after the '%' in messages.
	Name string
	// Kind is what the conversion prints.
	Kind Kind
	// Proto is the prototype DTrace names when the argument has the wrong
	// type ("char, short, int, long, or long long", "short", ...).
	Proto string

	Left  bool // '-': left-justify
	Plus  bool // '+': always print a sign
	Space bool // ' ': a space where a '+' would go
	Alt   bool // '#': alternate form
	Zero  bool // '0': pad with zeros
	Group bool // '\'': group thousands (no effect in the C locale)

	// Width and Prec are the field width and precision; 0 means none.
	// As in DTrace, a precision of 0 (as in "%.0d") is no precision.
	Width, Prec int
	// DynWidth and DynPrec say that the width or the precision comes
	// from an argument ('*'); the width argument comes first.
	DynWidth, DynPrec bool
	// Agg marks %@: the value is the aggregation's, in printa() only.
	Agg bool

	verb byte
	dict dictEntry
}

// Args returns how many arguments the conversion consumes from the
// argument list: one per '*', plus one for its value unless it is %% or %@.
func (c *Conversion) Args() int {
	n := 0
	if c.DynWidth {
		n++
	}
	if c.DynPrec {
		n++
	}
	if c.Kind != ArgNone && !c.Agg {
		n++
	}
	return n
}

// Conversions returns the format's conversions in order.
func (f *Format) Conversions() []*Conversion {
	var cs []*Conversion
	for _, s := range f.Segments {
		if s.Conv != nil {
			cs = append(cs, s.Conv)
		}
	}
	return cs
}

// NumArgs returns how many arguments the format consumes (not counting the
// aggregation values of %@ conversions).
func (f *Format) NumArgs() int {
	n := 0
	for _, c := range f.Conversions() {
		n += c.Args()
	}
	return n
}

// maxField bounds parsed widths and precisions. C's int would overflow
// first; the bound keeps a hostile format from asking for gigabytes, and
// is above the 10,000,000 Oracle's tst.wide.sh prints.
const maxField = 1 << 24

// Parse parses a format string. Errors are *Error values with DTrace's tag
// (D_SYNTAX) and wording.
func Parse(s string) (*Format, error) {
	f := &Format{Text: s}
	lit := 0 // start of the pending literal text
	n := 0   // conversions so far
	for {
		pct := strings.IndexByte(s[lit:], '%')
		if pct < 0 {
			break
		}
		pct += lit
		n++
		c, end, err := parseConversion(s, pct, n)
		if err != nil {
			return nil, err
		}
		f.Segments = append(f.Segments, Segment{Literal: s[lit:pct], Conv: c})
		lit = end
	}
	if lit < len(s) || s == "" {
		f.Segments = append(f.Segments, Segment{Literal: s[lit:]})
	}
	return f, nil
}

// parseConversion parses the directive whose '%' is at s[pct]; it returns
// the conversion and the index just past it.
func parseConversion(s string, pct, n int) (*Conversion, int, error) {
	c := &Conversion{Index: n}
	var name []byte
	digits, dot := 0, false
	i := pct
	for {
		i++
		if i >= len(s) {
			return nil, 0, errorf("D_SYNTAX", "format conversion #%d name expected before end of format string", n)
		}
		ch := s[i]
		switch {
		case ch >= '0' && ch <= '9':
			if !dot && digits == 0 && ch == '0' {
				c.Zero, c.Left = true, false
				continue
			}
			v := 0
			for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
				if v < maxField {
					v = v*10 + int(s[i]-'0')
				}
			}
			i--
			v = min(v, maxField)
			if dot {
				c.Prec = v
			} else {
				c.Width = v
			}
			digits++
			continue
		case ch == '#':
			c.Alt = true
			continue
		case ch == '*':
			what, set := "width", &c.DynWidth
			if dot {
				what, set = "precision", &c.DynPrec
			}
			if *set {
				return nil, 0, errorf("D_SYNTAX", "format conversion #%d has more than one '*' specified for the output %s", n, what)
			}
			*set = true
			continue
		case ch == '+':
			c.Plus = true
			continue
		case ch == '-':
			c.Left, c.Zero = true, false
			continue
		case ch == '.':
			if dot {
				return nil, 0, errorf("D_SYNTAX", "format conversion #%d has more than one '.' specified", n)
			}
			dot, digits = true, 0
			continue
		case ch == '?':
			c.Width = 16 // the width of a 64-bit pointer in hex
			continue
		case ch == '@':
			c.Agg = true
			continue
		case ch == '\'':
			c.Group = true
			continue
		case ch == ' ':
			c.Space = true
			continue
		case ch == '$':
			return nil, 0, errorf("D_SYNTAX", "format conversion #%d uses unsupported positional format (%%n$)", n)
		case ch == '%':
			if s[i-1] != '%' {
				return nil, 0, errorf("D_SYNTAX", "format conversion #%d cannot be combined with other format flags: %%%%", n)
			}
			name = append(name, ch)
		case ch == 'h' || ch == 'l' || ch == 'L' || ch == 'w':
			if len(name) < 6 {
				name = append(name, ch)
			}
			continue
		default:
			name = append(name, ch)
		}
		break
	}
	d, ok := dict[string(name)]
	if !ok {
		return nil, 0, errorf("D_SYNTAX", "format conversion #%d is undefined: %%%s", n, name)
	}
	c.Name = string(name)
	c.Kind, c.Proto, c.verb, c.dict = d.kind, d.proto, d.verb, d
	return c, i + 1, nil
}
