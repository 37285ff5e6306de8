package reactor

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FSEvent is one inotify event seen by a Watch.
type FSEvent struct {
	Mask uint32 // unix.IN_MODIFY, IN_CREATE, ... (IN_IGNORED: the watch is gone; IN_Q_OVERFLOW: events were lost)
	Name string // the entry inside a watched directory, "" for the path itself
}

// maxPendingFSEvents bounds the events a Watch keeps while nobody takes
// them; beyond it they are dropped and an IN_Q_OVERFLOW event says so.
const maxPendingFSEvents = 4096

// Watch is the filesystem event (libuv's uv_fs_event_t): inotify on a path.
// All watches of a loop share one inotify fd, registered with epoll
// edge-triggered like every fd, and read to EAGAIN when it becomes readable.
// The kernel watch is added by NewWatch and removed by Close ("released
// with the event"), so events between creation and Start are kept (up to
// 4096, then IN_Q_OVERFLOW) and make the next Start fire in the next Tick.
// The callback takes them with Events.
type Watch struct {
	event
	path    string
	mask    uint32
	wd      int
	pending []FSEvent
	taken   []FSEvent
	gone    bool // IN_IGNORED seen: the kernel dropped the watch (path deleted, unmounted)
}

type inotifyState struct {
	fd      *FD
	buf     []byte
	watches map[int][]*Watch // by watch descriptor; one wd per inode, shared by watches of the same path
}

// NewWatch creates an idle watch on path for the events in mask
// (unix.IN_MODIFY|unix.IN_CREATE|..., or unix.IN_ALL_EVENTS). A missing path
// is an *os.PathError (Op "inotify_add_watch").
func (l *Loop) NewWatch(path string, mask uint32, cb func()) (*Watch, error) {
	if l.closed {
		return nil, ErrLoopClosed
	}
	if mask&unix.IN_ALL_EVENTS == 0 {
		return nil, fmt.Errorf("reactor: NewWatch(%q, %#x): the mask names no inotify event", path, mask)
	}
	st := l.inotify
	if st == nil {
		l.stats.Syscalls++
		ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			return nil, os.NewSyscallError("inotify_init1", err)
		}
		f, err := l.register(ifd, kindInotify, unix.EPOLLIN|unix.EPOLLET)
		if err != nil {
			unix.Close(ifd)
			return nil, err
		}
		st = &inotifyState{fd: f, buf: make([]byte, 64<<10), watches: map[int][]*Watch{}}
		l.inotify = st
	}
	// IN_MASK_ADD: a second watch of the same inode widens the kernel mask
	// instead of replacing the first watch's. Each Watch filters by its own.
	l.stats.Syscalls++
	wd, err := unix.InotifyAddWatch(st.fd.fd, path, mask|unix.IN_MASK_ADD)
	if err != nil {
		return nil, &os.PathError{Op: "inotify_add_watch", Path: path, Err: err}
	}
	w := &Watch{event: newEvent(l, cb, "Watch"), path: path, mask: mask, wd: wd}
	st.watches[wd] = append(st.watches[wd], w)
	return w, nil
}

// Path returns the watched path.
func (w *Watch) Path() string { return w.path }

// Start lets the watch fire; fires in the next Tick if events are pending.
func (w *Watch) Start() {
	if w.activate("Watch") && len(w.pending) > 0 {
		w.loop.enqueue(w, &w.queued)
	}
}

// Stop stops firing; events keep being collected until Close.
func (w *Watch) Stop() { w.deactivate() }

// Events returns the events the last firing delivered. The slice is reused
// by the next firing.
func (w *Watch) Events() []FSEvent { return w.taken }

// Close removes the kernel watch (unless other Watches share it) and
// releases the event.
func (w *Watch) Close() {
	if w.state == stateClosed {
		return
	}
	w.release()
	l := w.loop
	if l.closed {
		return
	}
	st := l.inotify
	ws := st.watches[w.wd]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) > 0 {
		st.watches[w.wd] = ws
		return
	}
	delete(st.watches, w.wd)
	if !w.gone {
		l.stats.Syscalls++
		unix.InotifyRmWatch(st.fd.fd, uint32(w.wd))
	}
}

// read drains the inotify fd and hands each event to its watches.
func (st *inotifyState) read(l *Loop) {
	for {
		l.stats.Syscalls++
		n, err := unix.Read(st.fd.fd, st.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: drained (edge-triggered, so we must get here)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&st.buf[off]))
			name := ""
			if raw.Len > 0 {
				b := st.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
				for i, c := range b {
					if c == 0 {
						b = b[:i]
						break
					}
				}
				name = string(b)
			}
			off += unix.SizeofInotifyEvent + int(raw.Len)
			l.stats.WatchEvents++
			ev := FSEvent{Mask: raw.Mask, Name: name}
			if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
				for _, ws := range st.watches {
					for _, w := range ws {
						w.deliver(ev)
					}
				}
				continue
			}
			ws := st.watches[int(raw.Wd)]
			for _, w := range ws {
				if raw.Mask&unix.IN_IGNORED != 0 {
					w.gone = true
				}
				if raw.Mask&(w.mask|unix.IN_IGNORED|unix.IN_UNMOUNT) != 0 {
					w.deliver(ev)
				}
			}
			if raw.Mask&unix.IN_IGNORED != 0 {
				delete(st.watches, int(raw.Wd)) // the kernel may reuse the wd
			}
		}
	}
}

func (w *Watch) deliver(ev FSEvent) {
	switch {
	case len(w.pending) < maxPendingFSEvents:
		w.pending = append(w.pending, ev)
	case len(w.pending) == maxPendingFSEvents:
		w.pending = append(w.pending, FSEvent{Mask: unix.IN_Q_OVERFLOW})
	}
	if w.state == stateActive {
		w.loop.enqueue(w, &w.queued)
	}
}

func (w *Watch) fireQueued() {
	w.queued = false
	if w.state != stateActive || len(w.pending) == 0 {
		return
	}
	w.taken, w.pending = w.pending, w.taken[:0]
	w.fire()
}
