package semtest

import (
	"errors"
	"strings"
	"testing"

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
