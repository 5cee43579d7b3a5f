// This file reads and writes folded stacks.

package flamegraph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// A Stack is one call stack, root first, and how many samples ended in it.
type Stack struct {
	Frames []string
	Count  uint64
}

// ParseFolded reads folded stacks, one per line: frames separated by ';',
// then blanks and a decimal sample count. Frames may contain spaces — the
// count is what follows the last blank. Empty lines are skipped. A malformed
// line is an error that names its line number. Stacks are returned in input
// order, not merged.
func ParseFolded(r io.Reader) ([]Stack, error) {
	var stacks []Stack
	br := bufio.NewReader(r)
	for lineno := 1; ; lineno++ {
		// ReadString rather than a Scanner: deep stacks make long lines,
		// and a Scanner has a line-length limit.
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return stacks, fmt.Errorf("folded stacks: line %d: %w", lineno, err)
		}
		if line != "" {
			s, perr := parseLine(strings.TrimRight(line, "\r\n"))
			if perr != nil {
				return stacks, fmt.Errorf("folded stacks: line %d: %w", lineno, perr)
			}
			if s.Frames != nil {
				stacks = append(stacks, s)
			}
		}
		if err == io.EOF {
			return stacks, nil
		}
	}
}

// parseLine parses one line without its line ending. A blank line gives a
// Stack with nil Frames.
func parseLine(line string) (Stack, error) {
	if strings.TrimSpace(line) == "" {
		return Stack{}, nil
	}
	i := strings.LastIndexAny(line, " \t")
	if i < 0 {
		return Stack{}, errors.New(`no sample count: want "frame;frame;... COUNT"`)
	}
	stack, field := strings.TrimRight(line[:i], " \t"), line[i+1:]
	count, err := strconv.ParseUint(field, 10, 64)
	if err != nil {
		return Stack{}, fmt.Errorf("sample count %q is not a whole number of samples", field)
	}
	if stack == "" {
		return Stack{}, errors.New("no frames before the sample count")
	}
	frames := strings.Split(stack, ";")
	for j, f := range frames {
		if f == "" {
			return Stack{}, fmt.Errorf("frame %d is empty", j+1)
		}
	}
	return Stack{Frames: frames, Count: count}, nil
}

// WriteFolded writes stacks as folded lines, merging identical stacks
// (adding their counts) and sorting them by frames, so that the same
// samples always give the same text. A stack with no frames, or a frame that
// is empty or holds ';' or a line break, cannot be written faithfully and is
// an error; nothing is written then.
func WriteFolded(w io.Writer, stacks []Stack) error {
	merged, err := merge(stacks)
	if err != nil {
		return err
	}
	for _, s := range merged {
		for _, f := range s.Frames {
			if f == "" || strings.ContainsAny(f, ";\r\n") {
				return fmt.Errorf("folded stacks: frame %q cannot be written as a folded frame", f)
			}
		}
		if len(s.Frames) == 0 {
			return errors.New("folded stacks: a stack with no frames cannot be written")
		}
	}
	bw := bufio.NewWriter(w)
	var line []byte
	for _, s := range merged {
		line = line[:0]
		for i, f := range s.Frames {
			if i > 0 {
				line = append(line, ';')
			}
			line = append(line, f...)
		}
		line = append(line, ' ')
		line = strconv.AppendUint(line, s.Count, 10)
		line = append(line, '\n')
		bw.Write(line)
	}
	return bw.Flush()
}

// merge returns stacks sorted by frames with identical stacks merged. The
// input is left as it was.
func merge(stacks []Stack) ([]Stack, error) {
	sorted := slices.Clone(stacks)
	slices.SortStableFunc(sorted, compareStacks)
	out := sorted[:0]
	for _, s := range sorted {
		if n := len(out); n > 0 && slices.Equal(out[n-1].Frames, s.Frames) {
			sum, carry := bits.Add64(out[n-1].Count, s.Count, 0)
			if carry != 0 {
				return nil, errSampleOverflow
			}
			out[n-1].Count = sum
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

var errSampleOverflow = errors.New("folded stacks: sample counts add up to more than 2^64-1")

// compareStacks orders stacks frame by frame, a caller before its callees.
// It is slices.Compare, but tests equality first: frames are mostly equal
// and often the very same string, which == sees at once.
func compareStacks(a, b Stack) int {
	for i := range min(len(a.Frames), len(b.Frames)) {
		if x, y := a.Frames[i], b.Frames[i]; x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return len(a.Frames) - len(b.Frames)
}
