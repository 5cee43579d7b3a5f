package engine

import (
	"fmt"
	"os"
	"strconv"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/engine/sink"
)

// outputAction carries out setopt(), freopen() and ftruncate() as the
// consumer reads them. It is called with s.mu held.
func (s *Session) outputAction(kind codegen.ActionKind, vals []printf.Value) error {
	switch kind {
	case codegen.ActSetopt:
		name, val := vals[0].Str, "1" // setopt(name) turns name on
		if len(vals) > 1 {
			val = vals[1].Str
		}
		return s.setopt(name, val)
	case codegen.ActFreopen:
		return s.freopen(vals[0].Str)
	case codegen.ActFtruncate:
		f := s.outFile
		if f == nil {
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
	if err := OptionProblem(name, val); err != nil {
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
		return fmt.Errorf("couldn't set option \"%s\" to \"%s\": Operation illegal when tracing is active", name, val)
	}
	return nil
}

// freopen sends output to a file, appending, or back to where it went at
// first for "".
func (s *Session) freopen(path string) error {
	if s.firstOut == nil {
		s.firstOut = s.opts.Out
	}
	if s.outFile != nil {
		s.opts.Out.(*sink.Writer).Close()
		s.outFile.Close()
		s.outFile = nil
	}
	s.opts.Out = s.firstOut
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("failed to freopen %s: %v", path, err)
	}
	// A failed write to the file is reported, naming it, and stops
	// tracing: as dtrace, which writes there with its stdio checked.
	w := sink.New(f, path, false)
	w.OnFail(func(err *sink.Error) { s.Fail(err) })
	s.opts.Out, s.outFile = w, f
	return nil
}
