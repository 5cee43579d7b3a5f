package main

import (
	"fmt"
	"strings"
)

// opt is one parsed command-line option.
type opt struct {
	name byte
	arg  string
}

// getopt parses args as POSIX getopt(3) does with spec (letters, ':' after
// those that take an argument): options may be clustered ("-qs file",
// "-qsfile") and "--" ends them. As in dtrace(1), operands may come
// between options; they are the script's macro arguments, in order.
func getopt(args []string, spec string) (opts []opt, rest []string, err error) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			k := strings.IndexByte(spec, c)
			if k < 0 || c == ':' {
				return nil, nil, fmt.Errorf("illegal option -- %c", c)
			}
			if k+1 < len(spec) && spec[k+1] == ':' {
				val := a[j+1:]
				if val == "" {
					i++
					if i >= len(args) {
						return nil, nil, fmt.Errorf("option requires an argument -- %c", c)
					}
					val = args[i]
				}
				opts = append(opts, opt{c, val})
				break
			}
			opts = append(opts, opt{c, ""})
		}
	}
	return opts, append(rest, args[min(i, len(args)):]...), nil
}
