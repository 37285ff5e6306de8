// Package deadlock words the deadlock report of corobench's coroutine
// runtimes (impl/stackful, impl/stackless), so that both describe a deadlock
// the same way: how many coroutines wait, why nothing can wake them, and
// their names in spawn order, the first MaxNamed of them in the message (the
// runtimes' DeadlockError keeps them all).
package deadlock

import (
	"strconv"
	"strings"
)

// MaxNamed is how many waiting coroutines a message names; the rest are
// counted ("... and N more"), so that a deadlock among 100k coroutines does
// not make a megabyte of error text.
const MaxNamed = 20

// Message returns "<runtime>: deadlock: N <noun>(s) waiting with nothing
// runnable and no active reactor event: a, b, ..." for the waiting
// coroutines' names, in the order given.
func Message(runtime, noun string, waiting []string) string {
	var b strings.Builder
	b.WriteString(runtime)
	b.WriteString(": deadlock: ")
	b.WriteString(strconv.Itoa(len(waiting)))
	b.WriteString(" " + noun + "(s) waiting with nothing runnable and no active reactor event: ")
	b.WriteString(strings.Join(waiting[:min(len(waiting), MaxNamed)], ", "))
	if len(waiting) > MaxNamed {
		b.WriteString(", ... and " + strconv.Itoa(len(waiting)-MaxNamed) + " more")
	}
	return b.String()
}
