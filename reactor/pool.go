package reactor

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/corobench/corobench/internal/futex"
)

// Errors of the thread pool.
var (
	// ErrPoolQueueFull is wrapped by Work.Start when Options.PoolQueue items
	// are already waiting for a thread.
	ErrPoolQueueFull = errors.New("reactor: thread pool queue is full")
	// ErrCanceled is a Work's Err when Loop.Close cancelled it before a pool
	// thread took it. (Stop cancels too, but a stopped event never fires, so
	// nobody reads its Err.)
	ErrCanceled = errors.New("reactor: work canceled before it ran")
)

// Pool defaults (Options.PoolThreads, Options.PoolQueue). libuv's default is
// 4 threads (UV_THREADPOOL_SIZE); its queue is unbounded, ours is not, so a
// runaway producer gets an error instead of unbounded memory.
const (
	DefaultPoolThreads = 4
	DefaultPoolQueue   = 1024
)

// Job is the work a pool thread runs. Run must not touch the loop or any of
// its events: it runs on another thread. It communicates its result through
// its own fields, which the loop goroutine may read once the Work has fired
// (the pool's mutex orders Run's writes before the firing).
type Job interface{ Run() }

// JobFunc adapts a function to Job (converting a func to the interface does
// not allocate).
type JobFunc func()

// Run calls f.
func (f JobFunc) Run() { f() }

// Work is the thread-pool event (libuv's uv_work_t): Start queues a Job for
// a pool thread, and the event fires on the loop goroutine, in the ready
// phase of a Tick, once the Job has run. The completion travels like a
// Trigger's signal: the pool thread appends it to the pool's done list and
// wakes the loop through the shared eventfd.
//
// Like every event it is created idle, started (here: submitted), fires once
// per Start, and can be stopped: Stop on queued work removes it from the
// queue, so it never runs (Stats.WorkCanceled); Stop on work a thread has
// already taken cannot interrupt it — Go cannot preempt a thread out of a
// function, nor should it be interrupted half-way through a write — so the
// Job runs to the end and its completion is discarded (Stats.WorkDiscarded).
// Until that completion has reached the loop, Busy reports true and Start
// refuses: a Job still running may be writing into memory (a read buffer)
// that its owner must not reuse yet.
type Work struct {
	event
	err  error
	busy bool // loop side: submitted and neither cancelled while queued nor collected

	// Guarded by pool.mu.
	job        Job
	seq        uint64 // bumped by every Start and Stop: a completion with an older seq is discarded
	prev, next *Work  // pool queue links while queued
	inQueue    bool
}

// NewWork creates an idle work event that runs cb on the loop goroutine when
// a started Job has completed.
func (l *Loop) NewWork(cb func()) *Work {
	return &Work{event: newEvent(l, cb, "Work")}
}

// Start submits j to the pool. It fails, leaving the event idle, when
// Options.PoolQueue items already wait for a thread, beyond those the
// threads not running a job will take (the error wraps ErrPoolQueueFull
// and names the option), when the previous Job of this Work
// is still running after a Stop (Busy), or after Loop.Close. Starting an
// already-started Work is a misuse and panics.
func (w *Work) Start(j Job) error {
	l := w.loop
	switch {
	case l.closed:
		return ErrLoopClosed
	case w.state == stateClosed:
		panic("reactor: Work.Start after Close: create a new event instead")
	case w.state == stateActive:
		panic("reactor: Work.Start on a started Work: it runs one job at a time; wait for it to fire or Stop it")
	case w.busy:
		return errBusy("Work")
	case j == nil:
		panic("reactor: Work.Start(nil)")
	}
	p := l.threadPool()
	if err := p.submit(w, j); err != nil {
		return err
	}
	w.activate("Work")
	w.err, w.busy = nil, true
	l.stats.WorkSubmitted++
	return nil
}

// Stop cancels the work: queued, it is removed and never runs; running, it
// runs to the end and its result is discarded. Either way the event does not
// fire. A no-op when idle.
func (w *Work) Stop() {
	if w.state != stateActive {
		return
	}
	w.deactivate()
	if w.loop.pool.cancel(w) {
		w.loop.stats.WorkCanceled++
		w.busy = false
	}
}

// Close stops and releases the event. A job still running finishes on its
// thread and is then forgotten.
func (w *Work) Close() {
	w.Stop()
	w.release()
}

// Err is nil after a normal completion, ErrCanceled when Loop.Close
// cancelled the queued work. Errors of the job itself are the job's to
// report.
func (w *Work) Err() error { return w.err }

// Busy reports whether a Job of this Work is on a pool thread and its
// completion has not reached the loop yet (also true while a started Work
// runs).
func (w *Work) Busy() bool { return w.busy }

func (w *Work) fireQueued() {
	w.queued = false
	if w.state == stateActive {
		w.loop.stats.WorkCompleted++
		w.fire()
	} else {
		w.loop.stats.WorkDiscarded++ // stopped between collection and the ready phase
	}
}

// threadPool is a bounded set of OS threads that run Jobs.
//
// "OS threads" in Go: each worker is a goroutine that calls
// runtime.LockOSThread and never unlocks, so it owns one OS thread (an M)
// for its whole life and no other goroutine runs on it; when the worker
// exits, the thread exits with it. A blocking syscall in a Job (read(2) on a
// file, fsync) then blocks exactly that thread, the way a libuv pool thread
// blocks; Go hands the thread's P to another thread meanwhile, so the loop
// keeps running. CPU-bound Go code in a Job still needs a P to run, so at
// most GOMAXPROCS Jobs (and the loop) compute at once, whatever the pool
// size: that is Go's limit, not the pool's.
//
// Threads are started lazily, one per submit that finds more queued work
// than free threads, up to the size, and live until Loop.Close.
//
// An idle thread sleeps in futex(2) on wakeSeq, and submit wakes it with
// one FUTEX_WAKE: one kernel wake per hand-off, as a libuv pool thread
// costs (pthread_cond_signal). Rejected: sync.Cond, this pool's wait until
// session 13. Readying a goroutine locked to its thread goes through Go's
// scheduler: the goroutine lands on the waker's P, an idle P's thread is
// woken to take it, and only then is the locked thread woken and handed
// that P, so a hand-off could cost two thread wakes, and more when the
// loop's P was busy (Offload keeps it busy). Measured on the 2-vCPU KVM
// guest, stackless, `benchrun cell` with GOMAXPROCS=2, 8 rounds alternated
// with the old binary, medians: Offload c=1 kb=16 145 -> 20 µs per chunk,
// FileIO c=1 6.2 -> 4.4 µs per read (bimodal, both), DNS c=1 unchanged
// (~205 µs, the resolver's own work). Two Go threads ping-ponging, one of
// them locked, at GOMAXPROCS=2, unpinned (so some round trips stayed on one
// CPU, where a wake costs ~2 µs): 26-57 µs per round trip through
// sync.Cond, 4-13 µs through a bare futex.
type threadPool struct {
	loop     *Loop
	size     int
	maxQueue int

	mu         sync.Mutex
	head, tail *Work // queue
	queued     int   // Works in the queue
	threads    int   // threads started (at most size)
	running    int   // threads running a Job (taken from the queue, not yet returned)
	idle       int   // threads waiting for work (from before they unlock mu until they lock it again)
	closed     bool
	// wakeSeq is the futex word idle threads sleep on (idleWait): bumped
	// under mu whenever the queue gains an item for an idle thread or the
	// pool closes. A thread reads it under mu before it unlocks to sleep,
	// and futex(2) sleeps only while the word still holds that value, so a
	// bump between its unlock and its sleep is never lost.
	wakeSeq atomic.Uint32
	done    []completion // completions not yet collected by the loop
	spare   []completion
	wg      sync.WaitGroup

	threadsStarted atomic.Int64

	hook func(poolPoint) // poolHook when the pool was made; nil in production

	// cpus is Options.PoolCPUs as a set: when it has any, every thread
	// moves there as it starts (poolcpus.go).
	cpus unix.CPUSet
}

// poolPoint names a moment of a pool thread that a loaded machine, or an
// emulator, can stretch.
type poolPoint int

const (
	pointStart poolPoint = iota // a new thread, before it first looks at the queue
	pointWoken                  // a thread woken from waiting for work, before it looks again
	pointIdle                   // a thread about to sleep for work: mu unlocked, idleWait not yet called
)

// poolHook, set by tests only, is what a pool made from now on calls at each
// poolPoint of its threads, with no lock held. A test that blocks in it holds
// the thread there, and so forces the interleavings of a slow thread
// deterministically.
var poolHook func(poolPoint)

type completion struct {
	w   *Work
	seq uint64
	job Job
}

// discarder is implemented by Jobs that own a resource a discarded
// completion must release (FSReq: the fd of a cancelled open).
type discarder interface{ discard() }

func discardJob(j Job) {
	if d, ok := j.(discarder); ok {
		d.discard()
	}
}

func (l *Loop) threadPool() *threadPool {
	if l.pool == nil {
		p := &threadPool{loop: l, size: l.opts.PoolThreads, maxQueue: l.opts.PoolQueue, hook: poolHook}
		if p.size <= 0 {
			p.size = DefaultPoolThreads
		}
		if p.maxQueue <= 0 {
			p.maxQueue = DefaultPoolQueue
		}
		// NewWithOptions checked the set (checkPoolCPUs).
		p.cpus, _ = poolCPUSet(l.opts.PoolCPUs)
		l.pool = p
	}
	return l.pool
}

// submit queues j for w, starting a thread for it when no free one will
// take it.
//
// Admission counts the work waiting for a thread: the queued Works beyond
// the threads that will take them at once, which are the threads not
// running a Job, started or not yet started (size − running). So the pool
// holds at most size + maxQueue Jobs not yet returned (queued + running).
// That sum changes only when work is submitted or cancelled and when a Job
// returns, never when a thread starts or wakes: a thread that starts or
// wakes slowly (a loaded machine, qemu-user) cannot change whether a Start
// is refused. Counting the queue alone did: a Job handed to a starting
// thread still counted as waiting, and refused the next Start.
func (p *threadPool) submit(w *Work, j Job) error {
	p.mu.Lock()
	if p.queued+p.running >= p.size+p.maxQueue {
		err := fmt.Errorf("%w: %d items are waiting for a thread, %d of %d threads are running jobs (the limit is Options.PoolQueue = %d)",
			ErrPoolQueueFull, p.queued+p.running-p.size, p.running, p.size, p.maxQueue)
		p.mu.Unlock()
		return err
	}
	w.seq++
	w.job = j
	w.prev, w.next, w.inQueue = p.tail, nil, true
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
	p.queued++
	// Each free thread (idle, being woken, or starting: threads − running)
	// takes a queued Work before it waits again; start one more when the
	// queue holds more than they take. Counting idle threads instead would
	// take a thread already signalled for an earlier Work (not yet awake)
	// for a free one, and leave this Work behind that one.
	wake := false
	if p.queued > p.threads-p.running && p.threads < p.size {
		p.threads++
		p.wg.Add(1)
		p.threadsStarted.Add(1)
		go p.worker()
	} else if p.idle > 0 {
		p.wakeSeq.Add(1)
		wake = true
	}
	p.mu.Unlock()
	if wake {
		// After the unlock, so that the woken thread does not wait for mu.
		idleWake(&p.wakeSeq, 1)
	}
	return nil
}

// unlink removes w from the queue; p.mu held.
func (p *threadPool) unlink(w *Work) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next, w.inQueue = nil, nil, false
	p.queued--
}

// cancel invalidates w's current submission and reports whether it was
// still queued (then it will never run).
func (p *threadPool) cancel(w *Work) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.seq++
	if w.inQueue {
		p.unlink(w)
		w.job = nil
		return true
	}
	return false
}

// poolLockThreads is true in production; BenchmarkWorkRoundTrip flips it to
// measure what the locked threads cost against plain goroutines.
var poolLockThreads = true

func (p *threadPool) worker() {
	if poolLockThreads {
		runtime.LockOSThread() // never unlocked: the thread ends with the worker
		// Only a locked thread can be placed: an unlocked goroutine's
		// thread runs other goroutines too.
		p.placeThread()
	}
	defer p.wg.Done()
	if p.hook != nil {
		p.hook(pointStart)
	}
	p.mu.Lock()
	for {
		for p.head == nil && !p.closed {
			seq := p.wakeSeq.Load()
			p.idle++
			p.mu.Unlock()
			if p.hook != nil {
				p.hook(pointIdle)
			}
			idleWait(&p.wakeSeq, seq)
			p.mu.Lock()
			p.idle--
			if p.hook != nil {
				p.mu.Unlock()
				p.hook(pointWoken)
				p.mu.Lock()
			}
		}
		if p.head == nil { // closed and drained
			p.mu.Unlock()
			return
		}
		w := p.head
		p.unlink(w)
		p.running++ // with unlink's queued−−: queued + running unchanged (see submit)
		seq, j := w.seq, w.job
		w.job = nil
		p.mu.Unlock()
		j.Run()
		p.mu.Lock()
		p.running--
		p.done = append(p.done, completion{w, seq, j})
		first := len(p.done) == 1
		p.mu.Unlock()
		if first {
			p.loop.wakeUp() // later completions ride on this wakeup until collected
		}
		p.mu.Lock()
	}
}

// collect runs on the loop goroutine from onWake: it queues the Works whose
// completion is current and drops the others.
func (p *threadPool) collect(l *Loop) {
	p.mu.Lock()
	done := p.done
	p.done = p.spare[:0]
	for _, c := range done {
		c.w.busy = false
		if c.w.seq == c.seq && c.w.state == stateActive {
			l.enqueue(c.w, &c.w.queued) // counted in fireQueued
		} else {
			l.stats.WorkDiscarded++
			discardJob(c.job)
		}
	}
	p.mu.Unlock()
	clear(done)
	p.spare = done[:0]
}

// close cancels the queued work, lets running Jobs finish, and waits for
// every thread to exit (Loop.Close).
func (p *threadPool) close(l *Loop) {
	p.mu.Lock()
	for w := p.head; w != nil; w = p.head {
		p.unlink(w)
		w.err, w.job, w.busy = ErrCanceled, nil, false
		w.deactivate()
		l.stats.WorkCanceled++
	}
	p.closed = true
	p.wakeSeq.Add(1)
	p.mu.Unlock()
	idleWake(&p.wakeSeq, math.MaxInt32)
	p.wg.Wait()
	p.mu.Lock()
	for _, c := range p.done {
		c.w.busy = false
		c.w.deactivate()
		l.stats.WorkDiscarded++
		discardJob(c.job)
	}
	p.done = nil
	p.mu.Unlock()
}

// idleWait sleeps a pool thread while *word == seq (futex.Wait, no
// timeout: an idle thread may wait for work forever). The word moving, a
// signal and a spurious wake all return: the worker looks at the queue
// again under mu.
func idleWait(word *atomic.Uint32, seq uint32) {
	if err := futex.Wait(word, seq, 0); err != nil {
		// Only a bad address or operation gets here, on our own word.
		panic("reactor: pool thread's idle wait: " + err.Error())
	}
}

// idleWake wakes up to n pool threads sleeping in idleWait on word.
func idleWake(word *atomic.Uint32, n int) {
	if err := futex.Wake(word, n); err != nil {
		panic("reactor: waking pool threads: " + err.Error())
	}
}

// errBusy is the error of starting an event whose stopped job still runs.
func errBusy(kind string) error {
	return errors.New("reactor: " + kind + ".Start while its previous job is still running on a pool thread (stopped, not finished): wait until Busy() is false or use another " + kind)
}
