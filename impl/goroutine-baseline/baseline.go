// Package baseline is the goroutine baseline: the same blocking operations
// the stackful runtime offers, done the way idiomatic Go does them, with
// goroutines, channels, the time package's timers and Go's netpoller.
//
// It is deliberately thin. The comparison corobench makes is "our runtimes
// against what Go already gives you", so nothing here may add machinery Go
// does not have: a spawn is a `go` statement, a hand-off is an unbuffered
// channel, a sleep is time.Sleep, and fd waits go through os and net, which
// park on the netpoller. GOMAXPROCS is set by whoever starts the process
// (benchrun sets 1 for the goroutine-single row and all cores for
// goroutine-multi); this package does not change it.
package baseline

import (
	"runtime"
	"sync"
	"time"
)

// Runtime tracks the goroutines started through it so Run can wait for them.
// The zero value is ready to use. A Runtime may be used by many goroutines.
type Runtime struct {
	wg sync.WaitGroup
}

// Run runs main on a new goroutine and returns when main and every goroutine
// started with Go have returned. A panic in any of them crashes the process,
// as it would in a Go program.
func (r *Runtime) Run(main func()) {
	r.Go(main)
	r.wg.Wait()
}

// Go starts fn on a new goroutine that Run waits for.
func (r *Runtime) Go(fn func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
}

// Yield lets other goroutines run (runtime.Gosched).
func (r *Runtime) Yield() { runtime.Gosched() }

// Sleep blocks the calling goroutine for at least d (time.Sleep: a runtime
// timer, woken by the netpoller's timeout).
func (r *Runtime) Sleep(d time.Duration) { time.Sleep(d) }

// Signal is a hand-off point between two goroutines: an unbuffered channel,
// so Fire blocks until a Wait takes it. That rendezvous is the cost a Go
// program pays for the hand-off, which is what the baseline measures.
type Signal struct {
	ch chan struct{}
}

// NewSignal returns a Signal ready for use.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Fire hands the signal to a waiter, blocking until one takes it.
func (s *Signal) Fire() { s.ch <- struct{}{} }

// Wait blocks until another goroutine fires the signal.
func (s *Signal) Wait() { <-s.ch }
