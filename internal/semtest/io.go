package semtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/dnsserver"
	"github.com/corobench/corobench/internal/selfexec"
	"github.com/corobench/corobench/reactor"
)

// The reactor's awaitables (docs/design.md §4) as script ops: pool work,
// file IO, exec, inotify watches and DNS. Each op is one awaitable call of
// the task, or for exec the short sequence a user writes (start, read the
// output to end of file, await the exit); its outcome is logged with
// Recorder.IO, which words it. A runtime runs these cases only if its
// Driver is an IODriver without a reason to lack the features the case
// needs (IOConfig.Needs); otherwise RunCase skips the case saying why.

// Feature is one kind of reactor awaitable.
type Feature string

const (
	FeatWork  Feature = "pool work"     // OpWork, OpOpenGate, OpWaitStarted
	FeatFile  Feature = "file IO"       // OpFileOpen ... OpFileClose
	FeatExec  Feature = "exec"          // OpExec, OpExecKill
	FeatWatch Feature = "inotify watch" // OpWatch, OpWatchWait, OpWatchClose, OpAppend
	FeatDNS   Feature = "DNS"           // OpLookup
)

// opFeature is the feature an op needs, if any.
func opFeature(k OpKind) (Feature, bool) {
	switch k {
	case OpWork, OpOpenGate, OpWaitStarted:
		return FeatWork, true
	case OpFileOpen, OpFileWrite, OpFileWriteAt, OpFileReadAt, OpFileClose:
		return FeatFile, true
	case OpExec, OpExecKill:
		return FeatExec, true
	case OpWatch, OpWatchWait, OpWatchClose, OpAppend:
		return FeatWatch, true
	case OpLookup:
		return FeatDNS, true
	}
	return "", false
}

// IODriver is a Driver whose runtime has reactor awaitables. Its Run must
// create the runtime's reactor with p.IO.Reactor() and give each op its
// meaning as documented on the OpKind; the helpers below (IORun.Job,
// ChildArgv, AppendFile, the Result functions) are shared so that the
// drivers differ only in how they await.
type IODriver interface {
	Driver
	// Lacks reports why the runtime lacks f, if it does.
	Lacks(f Feature) (why string, lacking bool)
}

// IOConfig is a program's reactor set-up. Needs and the pool sizes are the
// case's; RunCase fills in the rest before the run.
type IOConfig struct {
	Needs       []Feature
	PoolThreads int // reactor.Options.PoolThreads (0: the default)
	PoolQueue   int // reactor.Options.PoolQueue (0: the default)

	// Dir is a fresh directory for the case's files (RunCase).
	Dir string
	// DNSServer is a dnsserver.Server's address (RunCase, FeatDNS).
	DNSServer string
	run       IORun
}

// Reactor is the reactor.Options the driver's runtime must use.
func (c *IOConfig) Reactor() reactor.Options {
	return reactor.Options{PoolThreads: c.PoolThreads, PoolQueue: c.PoolQueue, DNSServer: c.DNSServer}
}

// Path is the file name inside the case's directory.
func (c *IOConfig) Path(name string) string { return c.Dir + "/" + name }

// Run is the run's shared state: the gates jobs wait for.
func (c *IOConfig) Run() *IORun { return &c.run }

// IORun holds the gates of a run: a job of OpWork with Gated waits on a
// pool thread until OpOpenGate opens its gate.
type IORun struct {
	mu    sync.Mutex
	gates map[int]*gate
}

type gate struct {
	open    chan struct{}
	opened  bool
	started atomic.Int64 // jobs that reached the gate
}

func (r *IORun) gate(g int) *gate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gates == nil {
		r.gates = map[int]*gate{}
	}
	gt := r.gates[g]
	if gt == nil {
		gt = &gate{open: make(chan struct{})}
		r.gates[g] = gt
	}
	return gt
}

// Job returns op's job (OpWork): it waits for its gate if Gated, then
// stores Value*Value in *out, the value the driver logs. Give each op a
// fresh out: a job withdrawn after a timeout still writes it later.
func (r *IORun) Job(op Op, out *int) func() {
	var gt *gate
	if op.Gated {
		gt = r.gate(op.Gate)
	}
	return func() {
		if gt != nil {
			gt.started.Add(1)
			<-gt.open
		}
		*out = op.Value * op.Value
	}
}

// OpenGate opens gate g (OpOpenGate); opening it twice is harmless.
func (r *IORun) OpenGate(g int) {
	gt := r.gate(g)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !gt.opened {
		gt.opened = true
		close(gt.open)
	}
}

// WaitStarted blocks the calling thread until a job is waiting for gate g
// (OpWaitStarted). It sleeps in nanosleep(2) between looks rather than
// parking the goroutine: the caller may be on a fiber stack. After 10 s it
// panics: the pool never ran the job.
func (r *IORun) WaitStarted(g int) {
	gt := r.gate(g)
	for start := time.Now(); gt.started.Load() == 0; {
		if time.Since(start) > 10*time.Second {
			panic(fmt.Sprintf("semtest: no job reached gate %d within 10 s", g))
		}
		ts := unix.NsecToTimespec(int64(100 * time.Microsecond))
		_ = unix.Nanosleep(&ts, nil)
	}
}

// Release opens every gate, so a pool never waits at close for a job a
// failed case left waiting. Drivers defer it after the runtime's Close
// (so it runs first).
func (r *IORun) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, gt := range r.gates {
		if !gt.opened {
			gt.opened = true
			close(gt.open)
		}
	}
}

// FileFlags are the os.OpenFile flags and permissions of OpFileOpen.
func FileFlags(op Op) (int, os.FileMode) {
	if op.Value == 1 {
		return os.O_RDWR | os.O_CREATE | os.O_TRUNC, 0o600
	}
	return os.O_RDONLY, 0
}

// AppendFile is OpAppend: one byte appended with plain blocking calls (the
// write a watched file sees).
func AppendFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte{'x'})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WatchMask is the events OpWatch asks for.
const WatchMask = unix.IN_MODIFY

// The exec child: the test binary re-executed with childArg first, which
// ServeChild (called from an init function of the driver's test package)
// turns into the child's behaviour before any test runs.
const childArg = "semtest-child"

var childServed atomic.Bool

// ServeChild makes this test binary able to be OpExec's child. Call it
// from an init function of the package whose tests run the IO cases: when
// the binary was started as a child it does the child's work and exits
// here; otherwise it records that the binary serves children, without
// which RunCase skips the exec cases (a binary that does not serve them
// would run its tests instead, recursively).
func ServeChild() {
	if len(os.Args) > 2 && os.Args[1] == childArg {
		// syscall.Exit: a race-enabled binary would sleep 1 s in os.Exit.
		syscall.Exit(childMain(os.Args[2:]))
	}
	childServed.Store(true)
}

func childMain(args []string) int {
	switch {
	case len(args) == 3 && args[0] == "print":
		code, err := strconv.Atoi(args[2])
		if err != nil {
			return 125
		}
		if _, err := io.WriteString(os.Stdout, args[1]); err != nil {
			return 124
		}
		return code
	case len(args) == 1 && args[0] == "sleep":
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintf(os.Stderr, "semtest child: bad arguments %q\n", args)
	return 126
}

// ChildArgv is the path and argv OpExec (or, with sleep, OpExecKill)
// starts. The child of a Missing op is a path that does not exist.
func ChildArgv(op Op, sleep bool) (string, []string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	if op.Missing {
		exe = "/nonexistent/semtest-child"
	}
	argv := []string{exe, childArg, "print", op.Tag, strconv.Itoa(op.Value)}
	if sleep {
		argv = []string{exe, childArg, "sleep"}
	}
	if op.Missing {
		return exe, argv
	}
	// Under qemu-user without binfmt_misc (CI's arm64 tests) the binary
	// cannot exec itself; it then runs under the same emulator.
	return selfexec.Argv(exe, argv)
}

// IOKind classifies the reactor awaitables' own errors; ok is false for
// any other error (the driver classifies it).
func IOKind(err error) (ErrKind, bool) {
	var de *net.DNSError
	switch {
	case errors.Is(err, reactor.ErrPoolQueueFull):
		return QueueFull, true
	case errors.As(err, &de) && de.IsNotFound:
		return NotFound, true
	case errors.As(err, &de) && de.IsTimeout:
		return Timeout, true
	case errors.Is(err, os.ErrNotExist):
		return NotExist, true
	}
	return OK, false
}

// Result wordings, for Recorder.IO.

// ResultOK is the result of an op that returns nothing.
const ResultOK = "ok"

// ResultInt words a count or a job's value.
func ResultInt(n int) string { return strconv.Itoa(n) }

// ResultBytes words data read.
func ResultBytes(p []byte) string { return strconv.Quote(string(p)) }

// ResultAddrs words a lookup's addresses.
func ResultAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

// ResultExit words a child's output and how it ended.
func ResultExit(out []byte, st *os.ProcessState) string {
	if st == nil {
		return ResultBytes(out) + " no status"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ResultBytes(out) + " signal " + unix.SignalName(ws.Signal())
	}
	return ResultBytes(out) + " exit " + strconv.Itoa(st.ExitCode())
}

// ResultEvents words a watch's events: the masks of the path's own events,
// IN_MODIFY as "modify".
func ResultEvents(evs []reactor.FSEvent) string {
	if len(evs) == 0 {
		return "no events"
	}
	s := make([]string, 0, len(evs))
	for _, e := range evs {
		w := fmt.Sprintf("mask %#x", e.Mask)
		if e.Mask == unix.IN_MODIFY {
			w = "modify"
		}
		if e.Name != "" {
			w += " " + e.Name
		}
		if len(s) == 0 || s[len(s)-1] != w {
			s = append(s, w) // a repeated event says nothing more
		}
	}
	return strings.Join(s, ", ")
}

// describe words the op of an IO log line.
func describe(op Op) string {
	d := strings.ToLower(op.Kind.String())
	switch op.Kind {
	case OpWork:
		d += " " + strconv.Itoa(op.Value)
		if op.Gated {
			d += fmt.Sprintf(" gated g%d", op.Gate)
		}
	case OpFileOpen, OpWatch, OpLookup:
		d += " " + op.Tag
	case OpFileWrite:
		d += " " + strconv.Quote(op.Tag)
	case OpFileWriteAt:
		d += fmt.Sprintf(" %d %q", op.Value, op.Tag)
	case OpFileReadAt:
		d += fmt.Sprintf(" %d+%d", op.Value, op.Keep)
	case OpExec:
		if op.Missing {
			d += " missing binary"
		} else {
			d += fmt.Sprintf(" %q %d", op.Tag, op.Value)
		}
	}
	if op.Dur > 0 {
		d += " timeout " + op.Dur.String()
	}
	return d
}

// IO records the outcome of an IO op: result when kind is OK, else the
// kind. OpExecKill logs twice: its timed-out wait, then how the child
// ended.
func (r *Recorder) IO(task int, op Op, result string, kind ErrKind) {
	if kind == OK {
		r.add(task, describe(op)+" = "+result)
	} else {
		r.add(task, describe(op)+" ! "+kind.String())
	}
}

// Op constructors for the IO ops.

func Work(value int, timeout time.Duration) Op { return Op{Kind: OpWork, Value: value, Dur: timeout} }
func GatedWork(value, gate int, timeout time.Duration) Op {
	return Op{Kind: OpWork, Value: value, Gate: gate, Gated: true, Dur: timeout}
}
func OpenGate(gate int) Op    { return Op{Kind: OpOpenGate, Gate: gate} }
func WaitStarted(gate int) Op { return Op{Kind: OpWaitStarted, Gate: gate} }
func FileOpen(name string, create bool) Op {
	v := 0
	if create {
		v = 1
	}
	return Op{Kind: OpFileOpen, Tag: name, Value: v}
}
func FileWrite(data string) Op               { return Op{Kind: OpFileWrite, Tag: data} }
func FileWriteAt(data string, off int) Op    { return Op{Kind: OpFileWriteAt, Tag: data, Value: off} }
func FileReadAt(n, off int) Op               { return Op{Kind: OpFileReadAt, Keep: n, Value: off} }
func FileClose() Op                          { return Op{Kind: OpFileClose} }
func ExecChild(out string, code int) Op      { return Op{Kind: OpExec, Tag: out, Value: code} }
func ExecMissing() Op                        { return Op{Kind: OpExec, Missing: true} }
func ExecKill(timeout time.Duration) Op      { return Op{Kind: OpExecKill, Dur: timeout} }
func Watch(name string) Op                   { return Op{Kind: OpWatch, Tag: name} }
func WatchWait(timeout time.Duration) Op     { return Op{Kind: OpWatchWait, Dur: timeout} }
func WatchClose() Op                         { return Op{Kind: OpWatchClose} }
func Append(name string) Op                  { return Op{Kind: OpAppend, Tag: name} }
func Lookup(name string, d time.Duration) Op { return Op{Kind: OpLookup, Tag: name, Dur: d} }

// pidfdMissing reports why exec cannot run here when the kernel (or an
// emulator such as qemu-user, which runs the arm64 tests) lacks
// pidfd_open: a child's exit is a pidfd event (reactor.Process), and
// reactor.Spawn then fails with reactor.ErrNotSupported on every runtime
// alike, which the case's log would show as a difference rather than the
// missing feature it is.
func pidfdMissing() (why string, missing bool) {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err == unix.ENOSYS {
		return "pidfd_open is missing here (Linux before 5.3, or an emulator without it): exec's exit event needs it", true
	}
	if err == nil {
		unix.Close(fd)
	}
	return "", false
}

// prepareIO fills in p.IO's run-time fields (dir: the case's directory),
// or returns why the case cannot run on d (skip).
func prepareIO(d Driver, p *Program, dir string) (cleanup func(), skip string, err error) {
	cleanup = func() {}
	if p.IO == nil {
		return cleanup, "", nil
	}
	iod, ok := d.(IODriver)
	if !ok {
		return cleanup, fmt.Sprintf("%s has no reactor awaitables (its driver is not a semtest.IODriver)", d.Name()), nil
	}
	for _, f := range p.IO.Needs {
		if why, lacking := iod.Lacks(f); lacking {
			return cleanup, fmt.Sprintf("%s lacks %s: %s", d.Name(), f, why), nil
		}
		if f == FeatExec && !childServed.Load() {
			return cleanup, "the test binary does not serve the exec child: call semtest.ServeChild from an init function of the driver's test package", nil
		}
		if f == FeatExec {
			if why, missing := pidfdMissing(); missing {
				return cleanup, why, nil
			}
		}
	}
	p.IO.Dir = dir
	if slices.Contains(p.IO.Needs, FeatDNS) {
		srv, err := dnsserver.Listen()
		if err != nil {
			return cleanup, "", err
		}
		p.IO.DNSServer = srv.Addr()
		cleanup = func() { srv.Close() }
	}
	return cleanup, "", nil
}
