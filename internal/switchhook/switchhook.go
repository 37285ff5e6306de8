// Package switchhook is the switch-handler machinery of the TrueAsync design
// (docs/design.md §1), shared by corobench's coroutine runtimes (impl/stackful,
// impl/stackless) and named the same way by internal/semtest: the three
// moments a handler is called at, and the call of a coroutine's handler list
// that drops the handlers returning false.
//
// A switch handler is a hook bound to one coroutine. The runtime calls it in
// that coroutine's context when control really enters the coroutine (Enter,
// also at its start), leaves it (Leave) and when it finishes (Finish). Its
// return value is its lifetime: true keeps it, false removes it.
//
// Invariants of Fire: handlers run in installation order; each handler
// present when the firing starts is called exactly once; a handler installed
// by a handler during a firing is kept but first called at the next firing;
// the relative order of the surviving handlers is kept; removed handlers'
// slots are cleared, so the list holds no stale closures for the collector.
package switchhook

import "strconv"

// Kind is the moment a switch handler is called at.
type Kind uint8

const (
	Enter  Kind = iota // the coroutine got control (also at its start)
	Leave              // the coroutine gave control away (it suspended)
	Finish             // the coroutine finished: the last call a handler gets
)

// String returns "enter", "leave" or "finish" (the words of the semantic
// suite's logs), or "SwitchKind(n)" for a value outside the enum.
func (k Kind) String() string {
	switch k {
	case Enter:
		return "enter"
	case Leave:
		return "leave"
	case Finish:
		return "finish"
	}
	return "SwitchKind(" + strconv.Itoa(int(k)) + ")"
}

// Fire calls the handlers in *hs with (arg, kind), in order, and removes
// those that return false. A handler may append to *hs while it runs (a
// handler installing another); the new ones are kept, behind the survivors,
// and are not called by this firing.
//
// The runtimes call Fire only when the list is not empty, so a coroutine
// without handlers pays one length check per switch. H is the runtime's own
// exported handler type, so no conversion (and no allocation) happens.
func Fire[T any, H ~func(T, Kind) bool](hs *[]H, arg T, kind Kind) {
	n := len(*hs) // the handlers this firing calls
	kept := 0
	for i := 0; i < n; i++ {
		// Index through hs each time: a handler's append may have moved the
		// list to a new array (holding the same first n entries, compacted
		// up to kept).
		h := (*hs)[i]
		if h(arg, kind) {
			(*hs)[kept] = h
			kept++
		}
	}
	all := *hs
	added := copy(all[kept:], all[n:]) // handlers installed during the firing
	clear(all[kept+added:])
	*hs = all[:kept+added]
}
