package dtrace

import (
	"testing"

	"go.starlark.net/starlark"
)

// TestClosedSessionForgotten: the host lets go of a session once it is
// closed, so that a script opening one a round does not keep them all.
func TestClosedSessionForgotten(t *testing.T) {
	h := &Host{}
	b := starlark.NewBuiltin("dtrace.session", nil)
	var ss []*Session
	for range 3 {
		v, err := sessionFn(h, &starlark.Thread{}, b, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, v.(*Session))
	}
	ss[1].close()
	if len(h.sessions) != 2 || h.sessions[0] != ss[0] || h.sessions[1] != ss[2] {
		t.Errorf("after closing the second of three sessions the host holds %d", len(h.sessions))
	}
	h.Close()
	if len(h.sessions) != 0 {
		t.Errorf("after Close the host holds %d sessions", len(h.sessions))
	}
}
