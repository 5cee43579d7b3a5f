package tracefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Format is the record layout of one trace event, from its format file.
type Format struct {
	Name   string
	ID     int
	Fields []Field // in file order, common_* fields first
}

// Field is one field of an event record. Offsets are from the start of the
// record, which is also the start of a tracepoint program's context.
type Field struct {
	Name string
	// Type is the C type as the kernel spells it, with an array's length
	// moved into the type ("char[16]") and a __data_loc/__rel_loc prefix
	// removed ("char[]"); the flags below say which it was.
	Type   string
	Offset int
	Size   int
	Signed bool

	Common   bool // common_* header field (type, flags, preempt count, pid)
	DataLoc  bool // __data_loc: a u32 (len<<16 | offset from record start)
	RelLoc   bool // __rel_loc: a u32 (len<<16 | offset from the field's end)
	Pointer  bool // the value is a pointer (8 bytes on 64-bit)
	ArrayLen int  // for a fixed array ("char comm[16]"): 16; else -1
}

// IsArray reports whether f is a fixed-size inline array.
func (f *Field) IsArray() bool { return f.ArrayLen >= 0 }

// FormatOf returns the parsed format of events/group/name, reading the file
// at most once per process.
func FormatOf(group, name string) (*Format, error) {
	key := Event{group, name}
	formats.Lock()
	f, ok := formats.m[key]
	formats.Unlock()
	if ok {
		return f, nil
	}
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(group+name, "/") || group == ".." || name == ".." {
		return nil, fmt.Errorf("tracefs: bad event name %s:%s", group, name)
	}
	Busy()
	b, err := os.ReadFile(filepath.Join(d, "events", group, name, "format"))
	if err != nil {
		return nil, fmt.Errorf("tracefs: event %s:%s: %w", group, name, err)
	}
	f, err = ParseFormat(b)
	if err != nil {
		return nil, fmt.Errorf("tracefs: event %s:%s: %w", group, name, err)
	}
	formats.Lock()
	if formats.m == nil {
		formats.m = make(map[Event]*Format)
	}
	formats.m[key] = f
	formats.Unlock()
	return f, nil
}

var formats struct {
	sync.Mutex
	m map[Event]*Format
}

// ParseFormat parses the text of an event's format file.
func ParseFormat(b []byte) (*Format, error) {
	f := &Format{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(line[len("name:"):])
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.Atoi(strings.TrimSpace(line[len("ID:"):]))
			if err != nil {
				return nil, fmt.Errorf("bad ID line %q", line)
			}
			f.ID = id
		case strings.HasPrefix(line, "field:"):
			fld, err := parseField(line)
			if err != nil {
				return nil, err
			}
			f.Fields = append(f.Fields, fld)
		}
	}
	if len(f.Fields) == 0 {
		return nil, fmt.Errorf("format has no fields")
	}
	return f, nil
}

// parseField parses one line such as
//
//	field:const char * filename;	offset:24;	size:8;	signed:0;
func parseField(line string) (Field, error) {
	fld := Field{ArrayLen: -1}
	haveOff, haveSize := false, false
	for _, part := range strings.Split(line, ";") {
		part = strings.TrimSpace(part)
		k, v, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "field":
			err = parseDecl(strings.TrimSpace(v), &fld)
		case "offset":
			fld.Offset, err = strconv.Atoi(v)
			haveOff = true
		case "size":
			fld.Size, err = strconv.Atoi(v)
			haveSize = true
		case "signed":
			fld.Signed = v == "1"
		}
		if err != nil {
			return fld, fmt.Errorf("bad field line %q: %v", line, err)
		}
	}
	if fld.Name == "" || !haveOff || !haveSize {
		return fld, fmt.Errorf("bad field line %q", line)
	}
	return fld, nil
}

// parseDecl splits a C declaration ("char comm[16]", "__data_loc char[]
// filename", "const char * filename") into name and type.
func parseDecl(decl string, fld *Field) error {
	if t, ok := strings.CutPrefix(decl, "__data_loc "); ok {
		fld.DataLoc, decl = true, t
	} else if t, ok := strings.CutPrefix(decl, "__rel_loc "); ok {
		fld.RelLoc, decl = true, t
	}
	// Peel trailing dimensions: "x[2][3]" has dims "[2][3]".
	dims := ""
	for strings.HasSuffix(decl, "]") {
		i := strings.LastIndexByte(decl, '[')
		if i < 0 {
			return fmt.Errorf("unbalanced ]")
		}
		dims, decl = decl[i:]+dims, strings.TrimSpace(decl[:i])
	}
	i := len(decl)
	for i > 0 && isIdent(decl[i-1]) {
		i--
	}
	name, typ := decl[i:], strings.TrimSpace(decl[:i])
	if name == "" || typ == "" {
		return fmt.Errorf("cannot split %q into type and name", decl)
	}
	fld.Name = name
	fld.Common = strings.HasPrefix(name, "common_")
	fld.Pointer = strings.HasSuffix(typ, "*")
	if dims != "" {
		fld.ArrayLen = arrayLen(dims)
		fld.Pointer = false
		typ += dims
	}
	fld.Type = typ
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// arrayLen returns the number of elements of dims ("[16]", "[2][3]"), or 0
// when a length is not a number (the field's size still gives its bytes).
func arrayLen(dims string) int {
	n := 1
	for _, d := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(dims, "["), "]"), "][") {
		k, err := strconv.Atoi(d)
		if err != nil {
			return 0
		}
		n *= k
	}
	return n
}
