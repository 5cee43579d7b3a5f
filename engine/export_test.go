package engine

import "github.com/dstar-trace/dstar/engine/usym"

// ReadAggsCold reads and decodes e's aggregations as the first snapshot
// after tracing does, user symbolisation's per-process and per-file
// state forgotten first (the files' parsed symbols, elfsym's, stay); it
// returns how many rows it read.
func ReadAggsCold(e *Enabling) (int, error) {
	userSyms = usym.New()
	n := 0
	for _, l := range e.Prog.Code.Aggs {
		data, err := readAgg(e.coll.Maps[l.Map], l, false, true, nil)
		if err != nil {
			return 0, err
		}
		n += len(data.Rows)
	}
	return n, nil
}
