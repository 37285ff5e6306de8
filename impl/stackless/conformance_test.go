package stackless_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corobench/corobench/impl/stackless"
)

// nilAwaiter awaits a nil event with the helper its mode names.
type nilAwaiter struct {
	stackless.Coro
	mode string
}

func (a *nilAwaiter) Resume(c *stackless.Context) stackless.Step {
	switch a.mode {
	case "TryAwait":
		c.TryAwait(nil)
		return c.Done()
	case "AwaitTimeout":
		return c.AwaitTimeout(nil, 1)
	}
	return c.Await(nil)
}

// TestAwaitNilNamed: every await helper names a nil event in its panic.
func TestAwaitNilNamed(t *testing.T) {
	for _, mode := range []string{"Await", "TryAwait", "AwaitTimeout"} {
		s := stackless.New()
		msg := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprint(r)
				}
			}()
			s.Spawn(&nilAwaiter{mode: mode})
			s.Run()
			return ""
		}()
		if !strings.Contains(msg, "nil *Event") {
			t.Errorf("%s(nil) panicked with %q, want a message naming the nil event", mode, msg)
		}
		s.Close()
	}
}
