package stackless

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Task is a coroutine written as an explicit state machine.
//
// Resume runs the task from the state it stopped in until it must wait or
// has finished, and says which by returning a [Step] built by one of the
// [Context] helpers (Await, Yield, Sleep, Done, Fail, ...). The task keeps
// its program counter in a field of its own struct: this is the shape the
// Rust, C# and Kotlin compilers lower async functions to.
//
// A Task must be a pointer to a struct that embeds [Coro]; the embedded Coro
// is the runtime's whole per-task header, so the struct is the task's entire
// memory (see [StateSize]). The unexported method makes embedding Coro the
// only way to satisfy the interface.
type Task interface {
	Resume(c *Context) Step
	coro() *Coro
}

// Priority selects where a runnable task enters the run queue.
type Priority uint8

const (
	// Normal tasks are enqueued at the tail.
	Normal Priority = 0
	// High tasks are enqueued at the head, so they run before every normal one
	// (the reference design's ZEND_COROUTINE_HI_PRIORITY). Dequeue is always from the head.
	High Priority = 255
)

func (p Priority) String() string {
	switch p {
	case Normal:
		return "normal"
	case High:
		return "high"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// life is where a task is in its life cycle, independent of its waker.
type life uint8

const (
	lifeNew      life = iota // allocated, never spawned
	lifeSpawned              // spawned, never resumed yet
	lifeRunning              // resumed at least once, not finished
	lifeFinished             // finished, dropped or abandoned; may be spawned again
)

// Coro is the runtime's per-task header. Embed it (by value) in the task's
// state struct; never copy it after Spawn. Its zero value is ready to use.
//
// Everything the runtime needs per task lives here, intrusively: the link in
// the list of live tasks (for deadlock reports and shutdown), the waker with
// its event subscriptions and timer, and the switch handlers. Spawning,
// suspending and resuming a task therefore allocate nothing.
type Coro struct {
	task     Task             // back-reference used to call Resume; set by Spawn
	sched    *Scheduler       // the scheduler the task was spawned on
	liveNext *Coro            // intrusive doubly linked list of unfinished tasks
	livePrev *Coro            //
	handlers *[]SwitchHandler // nil unless the task installed switch handlers
	waker    Waker            // embedded: reused for every wait without allocation
	id       uint32           // spawn sequence number, 1-based; names the task in errors
	prio     Priority         // queue position on every wake-up
	life     life             //
	// cancelPending: a cancellation (Cancel, Shutdown) is delivered by the
	// task's next blocking op, which returns ErrCancelled at once.
	cancelPending bool
	// unwinding: the final shutdown phase resumed the task so that it runs
	// its cleanup and finishes; every wait now returns ErrCancelled at once.
	unwinding bool
}

func (co *Coro) coro() *Coro { return co }

// ID returns the task's spawn sequence number (1 for the first task spawned
// on its scheduler), or 0 before Spawn.
func (co *Coro) ID() uint32 { return co.id }

// WakerStatus returns the state of the task's waker.
func (co *Coro) WakerStatus() WakerStatus { return co.waker.status }

// Finished reports whether the task has finished: it returned Done or Fail,
// was dropped without running (cancelled before it started), or was
// abandoned while unwinding.
func (co *Coro) Finished() bool { return co.life == lifeFinished }

// Unwinding reports whether the task is being unwound by the final phase of a
// shutdown: it must run its cleanup and finish; its waits return ErrCancelled
// at once.
func (co *Coro) Unwinding() bool { return co.unwinding }

// Namer may be implemented by a Task to name it in deadlock and shutdown
// errors. Without it a task is named by its type and spawn number.
type Namer interface {
	Name() string
}

func taskName(co *Coro) string {
	if n, ok := co.task.(Namer); ok {
		return n.Name()
	}
	return fmt.Sprintf("%s#%d", reflect.TypeOf(co.task).Elem().Name(), co.id)
}

// HeaderSize is the size in bytes of the per-task runtime header [Coro]
// embedded in every task.
const HeaderSize = unsafe.Sizeof(Coro{})

// StateSize returns the size of the task's state struct, header included:
// the whole memory of a task. Spawning a task allocates nothing beyond the
// struct itself, which the caller allocates (one heap object; see
// AllocSize for what the Go allocator makes of it). While a task is runnable
// it also occupies one 8-byte slot of the scheduler's run queue, and while it
// sleeps one 24-byte slot of the reactor's timer heap; both are shared and
// reused, not per task.
func StateSize(t Task) uintptr {
	rt := reflect.TypeOf(t)
	if rt.Kind() != reflect.Pointer {
		return rt.Size()
	}
	return rt.Elem().Size()
}

// AllocSize returns the bytes the Go allocator takes for one heap-allocated
// state struct of t's type: StateSize plus the 8-byte malloc header that
// Go 1.22+ adds to pointerful objects over 512 bytes, rounded up to the
// allocator's size class (runtime/sizeclasses.go, Go 1.26) or, above 32 KiB,
// to whole 8 KiB pages. The package tests check it against
// runtime.MemStats.TotalAlloc.
func AllocSize(t Task) uintptr { return allocSize(StateSize(t)) }

// sizeClasses are the Go 1.26 allocator's small-object size classes.
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the allocator's footprint of a pointerful object of size n.
func allocSize(n uintptr) uintptr {
	const mallocHeader, headerFrom, page = 8, 512, 8192
	if n > headerFrom {
		n += mallocHeader
	}
	for _, c := range sizeClasses {
		if n <= c {
			return c
		}
	}
	return (n + page - 1) &^ (page - 1)
}

// taskPrefetchSpan is how many bytes from a task's Coro prefetchTask asks
// for: the header and three cache lines of the task's own fields (what
// prefetchTaskFields fetches at a timer's wake). prefetch_amd64.s and
// prefetch_arm64.s are unrolled for it.
const taskPrefetchSpan = HeaderSize + 3*64
