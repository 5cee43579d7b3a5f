package engine

import (
	"strings"

	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/providers"
)

// flowState is what -F (flowindent) remembers between records: the
// indentation and the record before this one.
type flowState struct {
	indent int
	last   *Enabling // the enabling and EPID of the previous record
	lastID uint32
}

// flowLine returns the line -F prints before a firing's records: an entry
// probe ("entry" or "…-entry") indents the lines after it by two, and a
// return probe takes that back, as dtrace(1) does. A second clause on the
// probe that just fired neither indents nor unindents again: it prints as
// any other probe, "| function:name". (dtrace unindents on a return's last
// clause, which it finds by reading ahead in its buffer; dstar reads records
// as they come, so it unindents on the first.)
func (s *Session) flowLine(e *Enabling, epid uint32, cpu int, p *providers.Probe) string {
	entry, ret := flowKind(p.Name)
	if (entry || ret) && s.flow.last != nil && (s.flow.last != e || s.flow.lastID != epid) {
		if prev := s.flow.last.Prog.Code.Records[s.flow.lastID]; prev != nil && prev.Probe.ID == p.ID {
			entry, ret = false, false
		}
	}
	s.flow.last, s.flow.lastID = e, epid

	prefix, label := "| ", p.Function+":"+p.Name
	syscall := p.Provider == "syscall"
	switch {
	case entry && syscall:
		prefix, label = " => ", p.Function
	case entry:
		prefix, label = " -> ", p.Function
	case ret && syscall:
		prefix, label = " <= ", p.Function
	case ret:
		prefix, label = " <- ", p.Function
	}
	if ret && s.flow.indent > 0 {
		s.flow.indent -= 2
	}
	line := output.FlowLine(cpu, s.flow.indent, prefix, label)
	if entry {
		s.flow.indent += 2
	}
	return line
}

// flowKind says whether a probe name is an entry or a return for -F: the
// whole name, or its last part after a '-' ("function-entry"), so that
// names such as "carpentry" are neither.
func flowKind(name string) (entry, ret bool) {
	is := func(suffix string) bool {
		return name == suffix || strings.HasSuffix(name, "-"+suffix)
	}
	return is("entry"), is("return")
}
