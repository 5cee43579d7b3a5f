package flamegraph

// A minimal client of Chromium's DevTools protocol over
// --remote-debugging-pipe: the browser reads commands from its fd 3 and
// writes replies and events to its fd 4, each a JSON object ended by a NUL
// byte. It needs no websocket, so the standard library is enough.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

type devtools struct {
	cmd      *exec.Cmd
	toChrome *os.File
	mu       sync.Mutex
	nextID   int
	waiting  map[int]chan cdpMessage
	// problems collects uncaught exceptions and console errors from pages.
	problems []string
	// promptAnswer is typed into any window.prompt a page opens.
	promptAnswer string
	writeMu      sync.Mutex
	done         chan struct{}
}

type cdpMessage struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

// startDevtools runs a headless chromium that is driven through a pipe; it
// is killed when the test ends.
func startDevtools(t *testing.T, chromium string) *devtools {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, append(bpftest.ChromiumFlags(t), "--remote-debugging-pipe", "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, evW} // fds 3 and 4
	// A group of its own, to kill its helper processes too: left running,
	// they write into the profile directory as the test removes it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	evW.Close()
	d := &devtools{cmd: cmd, toChrome: cmdW, waiting: map[int]chan cdpMessage{}, done: make(chan struct{})}
	go d.read(bufio.NewReader(evR))
	t.Cleanup(func() {
		cmdW.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		evR.Close()
	})
	// Runs first: whatever the test did, script errors are failures.
	t.Cleanup(func() { d.checkNoProblems(t) })
	return d
}

func (d *devtools) read(r *bufio.Reader) {
	defer close(d.done)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		d.mu.Lock()
		switch {
		case m.ID != 0:
			if ch := d.waiting[m.ID]; ch != nil {
				ch <- m
				delete(d.waiting, m.ID)
			}
		case m.Method == "Page.javascriptDialogOpening":
			// Answer from here: the command that opened the dialog
			// gets no reply until it is closed.
			d.nextID++
			go d.send(map[string]any{"id": d.nextID, "method": "Page.handleJavaScriptDialog", "sessionId": m.SessionID,
				"params": map[string]any{"accept": true, "promptText": d.promptAnswer}})
		case m.Method == "Runtime.exceptionThrown":
			d.problems = append(d.problems, "exception: "+string(m.Params))
		case m.Method == "Runtime.consoleAPICalled":
			var p struct{ Type string }
			json.Unmarshal(m.Params, &p)
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				d.problems = append(d.problems, "console: "+string(m.Params))
			}
		}
		d.mu.Unlock()
	}
}

// call sends method with params (in session, if not empty) and decodes the
// result into result, if not nil.
func (d *devtools) call(t *testing.T, session, method string, params, result any) {
	t.Helper()
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan cdpMessage, 1)
	d.waiting[id] = ch
	d.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := d.send(msg); err != nil {
		t.Fatalf("%s: writing to chromium: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				t.Fatalf("%s: %v in %s", method, err, m.Result)
			}
		}
	case <-d.done:
		t.Fatalf("%s: chromium closed the pipe", method)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no reply from chromium in 30s", method)
	}
}

func (d *devtools) send(msg map[string]any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	_, err = d.toChrome.Write(append(b, 0))
	return err
}

// A page is one tab, attached in flat mode.
type page struct {
	d       *devtools
	session string
}

func (d *devtools) open(t *testing.T, url string) *page {
	t.Helper()
	var target struct{ TargetID string }
	d.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	d.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	p := &page{d, attached.SessionID}
	d.call(t, p.session, "Runtime.enable", map[string]any{}, nil)
	d.call(t, p.session, "Page.enable", map[string]any{}, nil)
	d.call(t, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": 1200, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
	d.call(t, p.session, "Page.navigate", map[string]any{"url": url}, nil)
	return p
}

// eval evaluates a JavaScript expression in the page and decodes its value
// (returned by value, so JSON-able) into result.
func (p *page) eval(t *testing.T, expr string, result any) {
	t.Helper()
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	p.d.call(t, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		t.Fatalf("evaluating %s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if result != nil {
		if err := json.Unmarshal(r.Result.Value, result); err != nil {
			t.Fatalf("evaluating %s: %v in %s", expr, err, r.Result.Value)
		}
	}
}

// waitFor evaluates expr until it is true.
func (p *page) waitFor(t *testing.T, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		p.eval(t, "!!("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mouse sends a mouse event of type typ ("mouseMoved", "mousePressed",
// "mouseReleased") at x, y.
func (p *page) mouse(t *testing.T, typ string, x, y float64) {
	t.Helper()
	params := map[string]any{"type": typ, "x": x, "y": y}
	if typ != "mouseMoved" {
		params["button"] = "left"
		params["clickCount"] = 1
	}
	p.d.call(t, p.session, "Input.dispatchMouseEvent", params, nil)
}

func (p *page) click(t *testing.T, x, y float64) {
	t.Helper()
	p.mouse(t, "mouseMoved", x, y)
	p.mouse(t, "mousePressed", x, y)
	p.mouse(t, "mouseReleased", x, y)
}

// ctrlKey presses and releases Ctrl and key (a lower-case letter).
func (p *page) ctrlKey(t *testing.T, key string) {
	t.Helper()
	code := int(strings.ToUpper(key)[0])
	for _, typ := range []string{"rawKeyDown", "keyUp"} {
		p.d.call(t, p.session, "Input.dispatchKeyEvent", map[string]any{
			"type": typ, "modifiers": 2, "key": key, "code": "Key" + strings.ToUpper(key),
			"windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}, nil)
	}
}

// screenshot returns the page as a PNG.
func (p *page) screenshot(t *testing.T) []byte {
	t.Helper()
	var r struct{ Data []byte } // base64 in JSON decodes to []byte
	p.d.call(t, p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	return r.Data
}

func (d *devtools) checkNoProblems(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.problems {
		t.Errorf("the page reported %s", p)
	}
}
