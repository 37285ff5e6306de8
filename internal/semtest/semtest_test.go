package semtest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/reactor"

	"github.com/corobench/corobench/internal/switchhook"
	"github.com/corobench/corobench/internal/wakerstate"
)

func TestCasesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Cases() {
		if err := c.Program.Validate(); err != nil {
			t.Error(err)
		}
		if names[c.Program.Name] {
			t.Errorf("two cases named %q", c.Program.Name)
		}
		names[c.Program.Name] = true
		if len(c.Want) == 0 {
			t.Errorf("%s: empty expected log", c.Program.Name)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for _, c := range []struct {
		p    Program
		want string
	}{
		{Program{Name: "empty"}, "no tasks"},
		{Program{Name: "ev", Tasks: []Task{{"main", []Op{Await(0)}}}}, "raise Program.Events"},
		{Program{Name: "spawn-main", Tasks: []Task{{"main", []Op{Spawn(0, Normal)}}}}, "cannot be spawned"},
		{Program{Name: "twice", Tasks: []Task{{"main", []Op{Spawn(1, Normal), Spawn(1, High)}}, {"A", nil}}}, "spawned twice"},
		{Program{Name: "range", Tasks: []Task{{"main", []Op{Cancel(3)}}}}, "out of range"},
	} {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", c.p.Name, err, c.want)
		}
	}
}

func TestRecorderWording(t *testing.T) {
	p := &Program{Tasks: []Task{{"main", nil}, {"A", nil}}}
	r := NewRecorder(p)
	r.Log(0, "x")
	r.Awaited(1, 2, 7, OK)
	r.Awaited(1, 2, 0, Timeout)
	r.Failed(0, OpSleep, Cancelled)
	r.ResolveIgnored(0, 1)
	r.Deferred(1, "d")
	r.Exit(1, Cancelled)
	r.MicrotaskRan("m", true)
	r.HandlerError(&MicrotaskError{Tag: "m"})
	r.HandlerError(errors.New("boom"))
	r.Switch(0, StartHandlerName(1), switchhook.Enter)
	r.Waker(0, 1, wakerstate.Ignored)
	want := []string{
		"main: x", "A: await e2 = 7", "A: await e2 ! timeout", "main: sleep ! cancelled",
		"main: resolve e1 ignored: already fired", "A: defer d", "A: exit ! cancelled",
		"micro m failed", "handler: microtask m", "handler: unexpected error: boom",
		"main: start handler 1 enter", "main: waker A = IGNORED",
	}
	if got := r.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// noIO is a Driver without reactor awaitables; lacking is an IODriver that
// lacks every feature. Neither may run an IO case.
type noIO struct{ t *testing.T }

func (noIO) Name() string                 { return "no-io" }
func (noIO) Kind(error) ErrKind           { return Other }
func (noIO) DirectSwitch() bool           { return false }
func (noIO) DeadlockNames(error) []string { return nil }
func (d noIO) Run(p *Program, _ *Recorder) (Stats, error) {
	d.t.Errorf("%s ran on a driver without its features", p.Name)
	return Stats{}, nil
}

type lacking struct{ noIO }

func (lacking) Lacks(f Feature) (string, bool) { return "no " + string(f) + " here", true }

func TestIOCasesSkipWithoutTheirFeatures(t *testing.T) {
	for _, d := range []Driver{noIO{t}, lacking{noIO{t}}} {
		for _, c := range ioCases() {
			skipped := false
			t.Run(d.Name()+"/"+c.Program.Name, func(t *testing.T) {
				defer func() { skipped = t.Skipped() }()
				RunCase(t, d, c)
			})
			if !skipped {
				t.Errorf("%s on %T was not skipped", c.Program.Name, d)
			}
		}
	}
}

func TestValidateWantsIOFeatures(t *testing.T) {
	p := &Program{Name: "io-undeclared", Tasks: []Task{{"main", []Op{Work(1, 0)}}}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `needs feature "pool work"`) {
		t.Errorf("Validate = %v, want the missing feature named", err)
	}
	p.IO = &IOConfig{Needs: []Feature{FeatFile}}
	if err := p.Validate(); err == nil {
		t.Error("Validate accepted a Work op in a case needing only file IO")
	}
	p.IO.Needs = append(p.IO.Needs, FeatWork)
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

func TestIOKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ErrKind
		ok   bool
	}{
		{fmt.Errorf("x: %w", reactor.ErrPoolQueueFull), QueueFull, true},
		{&net.DNSError{Err: "no such host", IsNotFound: true}, NotFound, true},
		{&net.DNSError{Err: "i/o timeout", IsTimeout: true}, Timeout, true},
		{&os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, NotExist, true},
		{errors.New("other"), OK, false},
	} {
		if got, ok := IOKind(c.err); got != c.want || ok != c.ok {
			t.Errorf("IOKind(%v) = %s, %v; want %s, %v", c.err, got, ok, c.want, c.ok)
		}
	}
}

func TestIOWording(t *testing.T) {
	if got := ResultEvents([]reactor.FSEvent{{Mask: unix.IN_MODIFY}, {Mask: unix.IN_MODIFY}, {Mask: unix.IN_ATTRIB, Name: "f"}}); got != "modify, mask 0x4 f" {
		t.Errorf("ResultEvents = %q", got)
	}
	if got := ResultAddrs([]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::1")}); got != "10.0.0.1 ::1" {
		t.Errorf("ResultAddrs = %q", got)
	}
	if got := ResultExit([]byte("x"), nil); got != `"x" no status` {
		t.Errorf("ResultExit(nil state) = %q", got)
	}
	p := &Program{Tasks: []Task{{"main", nil}}}
	r := NewRecorder(p)
	r.IO(0, GatedWork(3, 1, time.Second), "", Timeout)
	r.IO(0, FileReadAt(4, 8), ResultBytes([]byte("abcd")), OK)
	r.IO(0, ExecMissing(), "", NotExist)
	want := []string{`main: work 3 gated g1 timeout 1s ! timeout`, `main: filereadat 8+4 = "abcd"`, `main: exec missing binary ! not exist`}
	if got := r.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
