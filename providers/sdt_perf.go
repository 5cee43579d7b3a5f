package providers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/tracefs"
)

// Detacher is an attachment whose kernel objects take long to release:
// Detach stops its program firing at once and releases everything but
// the file whose close waits on the kernel's clean-up, which it returns
// for the caller to close when it pleases (after the output is complete,
// in another process: the kernel keeps nothing of the session once every
// copy of the file is closed, whoever closes it).
type Detacher interface {
	io.Closer
	Detach() (*os.File, error)
}

// perfTracepoint is a program linked to a tracepoint's perf event. Closing
// the link is quick; closing the event waits for a grace period under a
// global mutex, about 27 ms here, one event after another.
type perfTracepoint struct {
	link  *link.RawLink
	event *os.File
}

func (t *perfTracepoint) Close() error {
	return errors.Join(t.link.Close(), t.event.Close())
}

// Detach unlinks the program and hands back the perf event, which fires
// nothing any more.
func (t *perfTracepoint) Detach() (*os.File, error) {
	return t.event, t.link.Close()
}

// attachPerfTracepoint opens the tracepoint's perf event (sampling every
// event, its record raw) and links prog to it.
func attachPerfTracepoint(group, event string, prog *ebpf.Program) (*perfTracepoint, error) {
	f, err := tracefs.FormatOf(group, event)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      uint64(f.ID),
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	tracefs.Busy()
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EPERM) && os.Geteuid() == 0 {
			// Root is refused only by the event's own rule: x86's
			// irq_work_exit takes no sampling event, which would
			// itself raise irq_work, and so on.
			return nil, fmt.Errorf("opening its perf event: %w (the kernel refuses sampling perf events on this tracepoint; a clause reading none of its fields runs on a raw tracepoint instead)", err)
		}
		return nil, fmt.Errorf("opening its perf event: %w", err)
	}
	ev := os.NewFile(uintptr(fd), "perf_event:"+group+":"+event)
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		ev.Close()
		return nil, fmt.Errorf("linking the program to its perf event: %w", err)
	}
	return &perfTracepoint{link: l, event: ev}, nil
}
