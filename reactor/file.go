package reactor

import (
	"os"

	"golang.org/x/sys/unix"
)

// File IO goes through the thread pool, as libuv's uv_fs_* do: a regular
// file is always "ready" to epoll, yet read(2) on it can block on the disk,
// so the call is made on a pool thread and its completion fires an FSReq on
// the loop. (io_uring would avoid the threads; it is not built: the pool path
// is the portable one and the fallback an io_uring path would need anyway.)

// File is an open regular file for FSReq: its descriptor and the name it
// was opened under, which errors report. It is not registered with epoll.
type File struct {
	fd   int
	name string
}

// NewFile wraps an fd already open (not registered, not owned: FSReq's
// StartClose closes it only when asked).
func NewFile(fd int, name string) *File { return &File{fd: fd, name: name} }

// Fd returns the file descriptor.
func (f *File) Fd() int { return f.fd }

// Name returns the path the file was opened under.
func (f *File) Name() string { return f.name }

type fsOp uint8

const (
	fsOpen fsOp = iota + 1
	fsClose
	fsRead
	fsWrite
	fsPread
	fsPwrite
	fsFsync
	fsStat
	fsFstat
)

var fsOpNames = [...]string{fsOpen: "open", fsClose: "close", fsRead: "read", fsWrite: "write",
	fsPread: "pread", fsPwrite: "pwrite", fsFsync: "fsync", fsStat: "stat", fsFstat: "fstat"}

// FSReq is one asynchronous file operation (libuv's uv_fs_t): an event
// built on Work. Create it idle with its callback, start one operation with
// a Start* method (that is the suspend point), and read Result, File or
// Stat when the callback runs. Stop cancels it like a Work: a queued
// operation never happens; a running one completes on its thread and is
// discarded (a cancelled read may still write into its buffer until Busy
// is false; a cancelled open's descriptor is closed when its completion
// reaches the loop, not leaked). An FSReq can be reused for the next operation once it
// fired (or was stopped and is no longer Busy). No allocation per operation
// except the error value of a failing one.
//
// Errors are *os.PathError naming the operation ("open", "pread", ...) and
// the path.
type FSReq struct {
	work Work
	op   fsOp
	// inputs, written before Start, read by the pool thread
	path string
	file *File
	buf  []byte
	off  int64
	flag int
	perm uint32
	// outputs, written by the pool thread, read after the callback
	n   int
	fd  int
	err error
	st  unix.Stat_t
}

// NewFSReq creates an idle file request that runs cb when an operation
// completes.
func (l *Loop) NewFSReq(cb func()) *FSReq {
	r := &FSReq{}
	r.work = Work{event: newEvent(l, cb, "FSReq")}
	return r
}

func (r *FSReq) start(op fsOp, f *File, path string, buf []byte, off int64) error {
	if r.work.state == stateActive {
		panic("reactor: FSReq." + fsOpNames[op] + " on a started FSReq: it does one operation at a time")
	}
	if r.work.busy {
		return errBusy("FSReq")
	}
	r.op, r.file, r.path, r.buf, r.off = op, f, path, buf, off
	if f != nil {
		r.path = f.name
	}
	r.n, r.fd, r.err = 0, -1, nil
	return r.work.Start(r)
}

// StartOpen opens path with open(2) flags (O_CLOEXEC is added) and perm.
func (r *FSReq) StartOpen(path string, flag int, perm os.FileMode) error {
	if r.work.busy {
		return errBusy("FSReq")
	}
	r.flag, r.perm = flag|unix.O_CLOEXEC, uint32(perm.Perm())
	return r.start(fsOpen, nil, path, nil, 0)
}

// StartClose closes f.
func (r *FSReq) StartClose(f *File) error { return r.start(fsClose, f, "", nil, 0) }

// StartRead reads into p at the file's offset (read(2)).
func (r *FSReq) StartRead(f *File, p []byte) error { return r.start(fsRead, f, "", p, 0) }

// StartWrite writes p at the file's offset (write(2), repeated until all of
// p is written or an error occurs).
func (r *FSReq) StartWrite(f *File, p []byte) error { return r.start(fsWrite, f, "", p, 0) }

// StartPread reads into p at off (pread(2)); the file offset is unchanged.
func (r *FSReq) StartPread(f *File, p []byte, off int64) error {
	return r.start(fsPread, f, "", p, off)
}

// StartPwrite writes all of p at off (pwrite(2)).
func (r *FSReq) StartPwrite(f *File, p []byte, off int64) error {
	return r.start(fsPwrite, f, "", p, off)
}

// StartFsync flushes f to storage (fsync(2)).
func (r *FSReq) StartFsync(f *File) error { return r.start(fsFsync, f, "", nil, 0) }

// StartStat stats path (stat(2), following links).
func (r *FSReq) StartStat(path string) error { return r.start(fsStat, nil, path, nil, 0) }

// StartFstat stats an open file.
func (r *FSReq) StartFstat(f *File) error { return r.start(fsFstat, f, "", nil, 0) }

// Result returns the byte count of a read or write (0 at end of file for a
// read) and the operation's error.
func (r *FSReq) Result() (int, error) { return r.n, r.err }

// File returns the file a successful StartOpen opened.
func (r *FSReq) File() *File {
	if r.op != fsOpen || r.err != nil || r.fd < 0 {
		return nil
	}
	return &File{fd: r.fd, name: r.path}
}

// Stat returns the result of a successful StartStat or StartFstat.
func (r *FSReq) Stat() *unix.Stat_t { return &r.st }

// Stop cancels the operation (see FSReq).
func (r *FSReq) Stop() { r.work.Stop() }

// discard is called on the loop goroutine for a completion nobody awaits
// any more: a stopped open's descriptor is closed instead of leaked.
func (r *FSReq) discard() {
	if r.op == fsOpen && r.err == nil && r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// Close stops and releases the request.
func (r *FSReq) Close() { r.Stop(); r.work.release() }

// Active reports whether an operation is started and has not completed.
func (r *FSReq) Active() bool { return r.work.Active() }

// Busy reports whether a stopped operation is still running on a pool thread.
func (r *FSReq) Busy() bool { return r.work.Busy() }

// Err is ErrCanceled when Loop.Close cancelled the queued operation.
func (r *FSReq) Err() error { return r.work.Err() }

// Run performs the operation on a pool thread (Job).
func (r *FSReq) Run() {
	var err error
	fd := -1
	if r.file != nil {
		fd = r.file.fd
	}
	for {
		switch r.op {
		case fsOpen:
			r.fd, err = unix.Open(r.path, r.flag, r.perm)
		case fsClose:
			err = unix.Close(fd)
			if err == unix.EINTR {
				err = nil // Linux closed the fd anyway; retrying could close a reused number
			}
		case fsRead:
			r.n, err = unix.Read(fd, r.buf)
		case fsPread:
			r.n, err = unix.Pread(fd, r.buf, r.off)
		case fsWrite, fsPwrite:
			err = r.writeAll(fd)
		case fsFsync:
			err = unix.Fsync(fd)
		case fsStat:
			err = unix.Stat(r.path, &r.st)
		case fsFstat:
			err = unix.Fstat(fd, &r.st)
		}
		if err != unix.EINTR {
			break
		}
	}
	if r.n < 0 {
		r.n = 0
	}
	if err != nil {
		r.err = &os.PathError{Op: fsOpNames[r.op], Path: r.path, Err: err}
	}
}

func (r *FSReq) writeAll(fd int) error {
	for r.n < len(r.buf) {
		var n int
		var err error
		if r.op == fsPwrite {
			n, err = unix.Pwrite(fd, r.buf[r.n:], r.off+int64(r.n))
		} else {
			n, err = unix.Write(fd, r.buf[r.n:])
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		r.n += n
	}
	return nil
}
