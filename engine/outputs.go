package engine

import (
	"fmt"
	"os"
	"strconv"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/printf"
)

// outputAction carries out setopt(), freopen() and ftruncate() as the
// consumer reads them. It is called with s.mu held.
func (s *Session) outputAction(kind codegen.ActionKind, vals []printf.Value) error {
	switch kind {
	case codegen.ActSetopt:
		name, val := vals[0].Str, ""
		if len(vals) > 1 {
			val = vals[1].Str
		}
		return s.setopt(name, val)
	case codegen.ActFreopen:
		return s.freopen(vals[0].Str)
	case codegen.ActFtruncate:
		f, ok := s.opts.Out.(*os.File)
		if !ok || f == os.Stdout {
			return fmt.Errorf("ftruncate( ): output is not a file freopen( ) opened")
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err := f.Seek(0, 0)
		return err
	}
	return nil
}

// setopt changes an option while tracing, as far as it can change then.
func (s *Session) setopt(name, val string) error {
	if err := CheckOption(name, val); err != nil {
		return fmt.Errorf("couldn't set option \"%s\" to \"%s\": %v", name, val, err)
	}
	on := val != "0" && val != "false"
	switch name {
	case "quiet":
		s.opts.Quiet = on
	case "aggsortkey":
		s.opts.AggSort.ByKey = on
	case "aggsortrev":
		s.opts.AggSort.Reverse = on
	case "aggsortpos", "aggsortkeypos":
		// CheckOption has made sure the value is an integer.
		n, _ := strconv.Atoi(val)
		if name == "aggsortpos" {
			s.opts.AggSort.AggPos = n
		} else {
			s.opts.AggSort.KeyPos = n
		}
	case "printsize":
		n, _ := ParseSize(val, 0)
		s.opts.PrintSize = PrintSize(int(n))
	case "stackfmt":
		s.opts.Folded = val == "folded"
	default:
		return fmt.Errorf("couldn't set option \"%s\": it cannot change while tracing", name)
	}
	return nil
}

// freopen sends output to a file, appending, or back to where it went at
// first for "".
func (s *Session) freopen(path string) error {
	if s.firstOut == nil {
		s.firstOut = s.opts.Out
	}
	if f, ok := s.opts.Out.(*os.File); ok && s.opts.Out != s.firstOut {
		f.Close()
	}
	if path == "" {
		s.opts.Out = s.firstOut
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		s.opts.Out = s.firstOut
		return fmt.Errorf("failed to freopen %s: %v", path, err)
	}
	s.opts.Out = f
	return nil
}
