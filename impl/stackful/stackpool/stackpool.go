// Package stackpool provides fiber stacks: memory from mmap, handed out and
// taken back many times, so that creating a fiber costs a few list
// operations instead of mmap+mprotect+munmap system calls.
//
// # Layout
//
// Stacks are carved out of slabs: one anonymous private mapping holds many
// stack slots, so that a million stacks need thousands of mappings, not a
// million (the kernel caps a process at vm.max_map_count mappings, 65530 by
// default). A slot is [guard page][stack], the guard page mapped PROT_NONE
// when guards are on. Every stack ends at its slot's top (stack colouring
// was measured and rejected: see grow). mprotect on part of a mapping
// splits it, so a guarded slot costs two mappings wherever it lives, which
// caps guarded stacks at about 32k per process. Guards are therefore optional: GuardAuto (the
// default) uses them while the process stays comfortably under the limit and
// then continues without; GuardOn fails with an error naming the sysctl and
// the option instead.
//
// A guard page is a second line of defence only: Go code overflowing a fiber
// stack is stopped by the runtime's split-stack check (stackguard0) before it
// reaches the guard. The guard catches assembly and NOSPLIT chains.
//
// # Stack size: never a power of two
//
// The bounds a Stack hands to a fiber (Lo, Hi) never span a power-of-two
// size. The Go runtime allocates every goroutine stack with a power-of-two
// size and checks that when it copies (grows or shrinks) or frees one; a
// fiber stack whose size is not a power of two turns any such attempt on our
// memory into a clean "fatal error: stack size not a power of 2" instead of
// the runtime freeing memory it does not own. Config.StackSize is rounded up
// to whole pages; if the result is a power of two (the common case, e.g. 64
// KiB), the usable bounds are made 16 bytes smaller (Lo is raised).
//
// # Reuse and trimming
//
// Put returns a stack to the pool; Get hands out the most recently returned
// one (its pages are likely still resident and cached). The pool follows
// the recent peak: time is cut into windows of Config.DecayOps pool
// operations (Get or Put), or of Config.DecayTime as seen by Tick, and at the
// end of each window the pool keeps as many stacks as were in use at the
// window's peak and releases the memory of the other free ones:
// madvise(MADV_DONTNEED) for slots of a slab still in use, munmap for slabs
// none of whose stacks is in use or recently returned. Trimming happens inside
// Get, Put, Tick or Trim; there is no background goroutine.
//
// A burst of releases is not trimmed. An operation-counted window in which
// use only fell (it never rose above its level at the window's start, and
// ended below it) is a drain: a mass shutdown, the end of a fan-out. Such a
// window releases nothing and simply starts the next one, so the drain pays
// no madvise or munmap per 65536 releases; Close, or the first window in
// which use stops falling, gives the memory back. The cost is that a pool
// whose use keeps falling, window after window, holds its free stacks until
// the fall stops (at most its earlier peak, which it held anyway); a
// time-based window (Tick) and Trim release regardless, so a scheduler that
// calls Tick when idle still returns the memory of a drain that ends in
// idleness. Stats.Drains counts the windows that were skipped this way.
//
// A Pool is not safe for concurrent use: it belongs to one scheduler.
package stackpool

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GuardMode selects guard pages below each stack.
type GuardMode int

const (
	// GuardAuto puts a guard page below each stack while the mappings of
	// all pools stay under the map budget (see Config.MaxMapCount), and
	// allocates this pool's further slabs without guards once a guarded
	// slab would not fit.
	GuardAuto GuardMode = iota
	// GuardOn always guards; Get fails with a *MapLimitError when the map
	// budget would be exceeded.
	GuardOn
	// GuardOff never guards: one mapping per slab.
	GuardOff
)

func (m GuardMode) String() string {
	switch m {
	case GuardAuto:
		return "auto"
	case GuardOn:
		return "on"
	case GuardOff:
		return "off"
	}
	return "GuardMode(" + strconv.Itoa(int(m)) + ")"
}

// Defaults for the zero values of Config.
const (
	DefaultStackSize = 64 << 10 // bytes of stack per fiber, before the power-of-two adjustment
	DefaultDecayOps  = 1 << 16  // pool operations per trimming window
	minSlabStacks    = 16       // first slab size when Config.SlabStacks is 0
	maxSlabStacks    = 1024     // largest slab when Config.SlabStacks is 0
	powerOfTwoTrim   = 16       // bytes taken off a power-of-two stack (keeps 16-byte alignment)
	defaultMapLimit  = 65530    // vm.max_map_count's kernel default, if /proc is unreadable
)

// GuardOption and SlabOption name, in errors, the settings that control
// guard pages and slab size. The harness sets them to its own flags.
var (
	GuardOption = "stackpool.Config.Guard"
	SlabOption  = "stackpool.Config.SlabStacks"
)

// allPoolMaps counts the mappings held by all pools of the process, so that
// several pools share one budget under vm.max_map_count.
var allPoolMaps atomic.Int64

// Config configures a Pool. The zero Config is the default.
type Config struct {
	// StackSize is the stack size per fiber in bytes (default
	// DefaultStackSize). It is rounded up to whole pages; a power-of-two
	// result gives bounds 16 bytes smaller (see the package doc).
	StackSize int

	// Guard selects guard pages (default GuardAuto).
	Guard GuardMode

	// SlabStacks is the number of stacks per mapping. 0 grows slabs with
	// the pool: the first holds 16 stacks, each later one as many as the
	// pool already has, up to 1024. 1 gives one mapping per stack.
	SlabStacks int

	// DecayOps is the length of a trimming window in pool operations (Get
	// and Put). 0 means DefaultDecayOps; a negative value turns
	// operation-counted windows off (only Tick and Trim trim).
	DecayOps int

	// DecayTime is the length of a trimming window as measured by the
	// times passed to Tick. 0 turns time-based windows off.
	DecayTime time.Duration

	// MaxMapCount is the process's mapping limit to plan against. 0 reads
	// /proc/sys/vm/max_map_count. The budget is that limit, less the
	// mappings the process has outside stack pools when New runs (as
	// counted at most a second before: see mapCountAge), less a
	// reserve (1/16 of the limit, at least 256) for the Go runtime's and the
	// program's later mappings; all pools share it. Tests set it low to
	// exercise the limit.
	MaxMapCount int
}

// Stack is one fiber stack handed out by a Pool: usable memory [Lo, Hi).
type Stack struct {
	lo, hi uintptr
	slab   *slab
	slot   int32
}

// Lo returns the lowest usable address (the stack's limit).
func (s Stack) Lo() uintptr { return s.lo }

// Hi returns one past the highest usable address (where the stack starts).
func (s Stack) Hi() uintptr { return s.hi }

// Size returns Hi − Lo, never a power of two.
func (s Stack) Size() int { return int(s.hi - s.lo) }

// slotState is where one slot of a slab is in its life.
type slotState uint8

const (
	slotFresh    slotState = iota // never handed out: no resident pages
	slotInUse                     // handed out by Get
	slotWarm                      // returned by Put; pages may be resident
	slotReleased                  // returned and trimmed (MADV_DONTNEED): no resident pages
)

// slab is one mapping holding n stack slots of slotSize bytes each.
type slab struct {
	pool     *Pool
	base     unsafe.Pointer // start of the mapping (not Go memory: the GC ignores it)
	size     uintptr        // bytes mapped
	slotSize uintptr        // guard + stack
	guard    uintptr        // bytes of guard at the bottom of each slot (0 or a page)
	maps     int            // mappings this slab is estimated to occupy
	state    []slotState
	inUse    int // slots handed out
	warm     int // slots in the pool's warm list
}

// Pool hands out and takes back fiber stacks.
type Pool struct {
	cfg       Config
	page      uintptr
	stackSize uintptr // page-rounded stack part of a slot
	trim      uintptr // bytes by which Lo is raised (0 or powerOfTwoTrim)

	warm  []Stack // returned stacks, most recent last
	cold  []Stack // fresh or released stacks, taken after warm ones
	slabs []*slab

	inUse, peak  int
	startInUse   int // inUse when the current window began
	ops          int
	windowStart  time.Time
	totalSlots   int
	mapLimit     int // vm.max_map_count (or Config.MaxMapCount)
	mapBudget    int // mappings all pools together may use
	mapsUsed     int // mappings this pool holds (estimate)
	guardsFailed bool

	stats Stats
}

// Stats are a Pool's counters and current sizes.
type Stats struct {
	Hits   uint64 // Gets served by a warm stack (returned by Put, not trimmed)
	Misses uint64 // Gets served by a stack whose memory was not resident: a fresh slot or a trimmed one

	Trims          uint64 // windows that released memory
	Drains         uint64 // operation-counted windows in which use only fell: nothing released (see the package doc)
	StacksReleased uint64 // free stacks whose memory trimming gave back (madvise(MADV_DONTNEED), or munmap of their slab)
	BytesReleased  uint64 // their stack bytes (an upper bound on the resident memory given back)
	SlabsMapped    uint64 // slabs mapped (mmap calls)
	SlabsUnmapped  uint64 // slabs unmapped by trimming or Close (munmap calls)
	BytesUnmapped  uint64 // address space returned by munmap, guards included

	InUse    int // stacks handed out now
	Warm     int // free stacks whose pages may be resident
	Cold     int // free stacks with no resident pages (fresh or trimmed)
	Peak     int // most stacks in use at once in the current window
	Slabs    int // mappings (slabs) held now
	Guarded  int // slabs with guard pages
	Maps     int // kernel mappings the slabs occupy (estimate: 1 per plain slab, 2 per guarded stack)
	MapLimit int // the limit planned against (vm.max_map_count)
}

// New returns a Pool for cfg. It maps nothing yet.
func New(cfg Config) (*Pool, error) {
	page := uintptr(os.Getpagesize())
	if cfg.StackSize == 0 {
		cfg.StackSize = DefaultStackSize
	}
	if cfg.StackSize < int(page) {
		return nil, fmt.Errorf("stackpool: StackSize %d is below one page (%d bytes); a fiber needs at least that", cfg.StackSize, page)
	}
	if cfg.StackSize > 1<<30 {
		return nil, fmt.Errorf("stackpool: StackSize %d is above 1 GiB, the Go runtime's own maximum goroutine stack", cfg.StackSize)
	}
	if cfg.Guard < GuardAuto || cfg.Guard > GuardOff {
		return nil, fmt.Errorf("stackpool: unknown Guard mode %d; use GuardAuto, GuardOn or GuardOff", cfg.Guard)
	}
	if cfg.SlabStacks < 0 {
		return nil, fmt.Errorf("stackpool: SlabStacks %d is negative; use 0 for growing slabs or a positive count", cfg.SlabStacks)
	}
	if cfg.DecayOps == 0 {
		cfg.DecayOps = DefaultDecayOps
	}
	if cfg.DecayTime < 0 {
		return nil, fmt.Errorf("stackpool: DecayTime %v is negative", cfg.DecayTime)
	}
	p := &Pool{cfg: cfg, page: page}
	p.stackSize = (uintptr(cfg.StackSize) + page - 1) &^ (page - 1)
	if p.stackSize&(p.stackSize-1) == 0 {
		p.trim = powerOfTwoTrim
	}
	p.planMaps(processMaps.get(countClock()))
	return p, nil
}

// planMaps sets the pool's limit and budget from a count of the process's
// mappings: the limit (Config.MaxMapCount, or vm.max_map_count as counted)
// minus what the process maps outside the pools and a reserve for the Go
// runtime's and the program's own later mappings. All pools share the
// budget (allPoolMaps counts what they hold).
func (p *Pool) planMaps(c mapCount) {
	p.mapLimit = p.cfg.MaxMapCount
	if p.mapLimit == 0 {
		p.mapLimit = c.sysctl
	}
	reserve := max(256, p.mapLimit/16)
	p.mapBudget = p.mapLimit - c.outside - reserve
	p.stats.MapLimit = p.mapLimit
}

// plainShare: GuardAuto stops guarding while 1/plainShare of the map
// budget is free for the plain slabs that follow (under the default
// vm.max_map_count, ~3800 slabs of up to 1024 stacks: millions of stacks).
const plainShare = 8

// mapCountAge is how old a count of the process's mappings New may plan
// with. Counting reads /proc/self/maps, whose cost grows with the
// mappings (µs to ms in the kernel, under the process's mmap lock): paid
// by every New, it made each fresh runtime of a short-lived scheduler
// (Spawn pool=cold: one Scheduler per coroutine) a few system calls long
// enough for the Go runtime's sysmon to retake the P and wake another M
// on the same CPU, which then preempted the timed lifecycles (Spawn
// stackful-asm alive=1 pool=cold, interleaved: 152-724 involuntary
// switches per 1000 lifecycles with a count per New, 10-416 with one per
// process; session 8, helper B). A count a second old plans as well as a
// fresh one: a pool plans once, at New, and then lives on with that plan
// for as long as it lives, and the budget keeps a reserve (1/16 of the
// limit, at least 256) for the mappings the process makes after the
// count.
//
// Why not count once and then only track the pools' own mappings
// (allPoolMaps): the rest of the process's mappings change too (the Go
// heap, the program's own mmaps), and a pool created an hour later must
// plan against those. Why not count afresh when a pool nears its budget:
// the kernel merges adjacent plain slabs into one mapping, so a count
// taken while pools hold slabs reads fewer mappings than allPoolMaps
// (an upper bound) says they hold, and the outside share it derives is
// too low, by as many slabs as merged; a count when New runs has the same
// error, but a process making pools every few µs need not read it more
// than once a second.
const mapCountAge = time.Second

// mapCount is one count of the process's mappings.
type mapCount struct {
	at      time.Time // when it was made (zero: never)
	sysctl  int       // vm.max_map_count
	outside int       // the process's mappings outside stack pools
}

// processMaps is the process's last count, shared by its pools (a process
// has one mapping limit); pools of different schedulers may be made on
// different goroutines at once, hence the lock.
var processMaps mapCountCache

// mapCountCache holds a process's last count of its mappings (processMaps).
type mapCountCache struct {
	mu sync.Mutex
	c  mapCount
}

// countClock dates the counts (a variable so that tests can stop the
// clock: a count's age must not depend on how fast the test machine is).
var countClock = time.Now

// mapCounts counts the reads of /proc/self/maps (tests check how often New
// makes one).
var mapCounts atomic.Int64

// get returns the process's count, counting afresh if it is mapCountAge
// old at now (or was never made).
func (m *mapCountCache) get(now time.Time) mapCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c.at.IsZero() || now.Sub(m.c.at) >= mapCountAge || now.Before(m.c.at) {
		// Mappings held by pools are counted in allPoolMaps, the rest
		// of the process's in outside.
		m.c = mapCount{at: now, sysctl: readMapLimit(), outside: countMaps() - int(allPoolMaps.Load())}
	}
	return m.c
}

// Usable returns the size of the stacks the pool hands out (Hi − Lo).
func (p *Pool) Usable() int { return int(p.stackSize - p.trim) }

// Get hands out a stack: the most recently returned one if any, else one
// whose memory is not resident, else a slot of a new slab.
func (p *Pool) Get() (Stack, error) {
	var s Stack
	if n := len(p.warm); n > 0 {
		s = p.warm[n-1]
		p.warm = p.warm[:n-1]
		s.slab.warm--
		p.stats.Hits++
	} else {
		if len(p.cold) == 0 {
			if err := p.grow(); err != nil {
				return Stack{}, err
			}
		}
		n := len(p.cold)
		s = p.cold[n-1]
		p.cold = p.cold[:n-1]
		p.stats.Misses++
	}
	s.slab.state[s.slot] = slotInUse
	s.slab.inUse++
	p.inUse++
	if p.inUse > p.peak {
		p.peak = p.inUse
	}
	// Counted after the take, as Put counts after the return, so that a
	// window closing here sees this stack in use (and cannot release the
	// warm stack this Get would have reused).
	p.countOp()
	return s, nil
}

// PeekHi returns the top (Hi) of the stack the (d+1)-th Get from now
// would hand out if no Put came between, or 0 if the pool holds no such
// free stack (the pool would have to grow). It changes nothing: a caller
// about to start several fibers uses it to prefetch the top lines of a
// stack before it takes it.
func (p *Pool) PeekHi(d int) uintptr {
	if n := len(p.warm); d < n {
		return p.warm[n-1-d].hi
	}
	if d -= len(p.warm); d < len(p.cold) {
		return p.cold[len(p.cold)-1-d].hi
	}
	return 0
}

// Put returns a stack handed out by Get. The fiber that ran on it must have
// finished or been abandoned before the next Get, which may hand its memory
// out again: Put itself neither touches the stack's memory nor releases it
// (a window closing in this Put keeps at least the window's peak minus what
// is still in use, at least this stack, and releases the least recently
// returned first; TestPutNeverReleasesItsStack), so a fiber may give back
// the stack it is running on as its last act before switching away, as
// long as no Get runs before that switch. Putting a stack twice, or one
// from another pool, panics.
func (p *Pool) Put(s Stack) {
	if s.slab == nil || s.slab.pool != p || s.slab.state[s.slot] != slotInUse {
		panic("stackpool: Put of a stack that is not in use from this pool (double Put, a zero Stack, or a stack of another pool)")
	}
	s.slab.state[s.slot] = slotWarm
	s.slab.inUse--
	s.slab.warm++
	p.inUse--
	if len(p.warm) == cap(p.warm) {
		p.growWarm()
	}
	p.warm = append(p.warm, s)
	p.countOp()
}

// growWarm makes room in the warm list for every slot the pool has (the
// most it can ever hold), in one allocation. append's doublings made a
// mass release (a shutdown of 100000 coroutines, each stack Put as it
// finishes) copy the growing list ~17 times, with the collector off each
// time into fresh memory: growslice's memmove was 10% of Shutdown
// stackful-asm n=100000's timed profile (`benchrun profile -scenario
// shutdown -impl stackful-asm -param n=100000 -benchtime 2s`). The
// list's capacity is kept for the pool's life (Get and trimming reslice
// it), so a pool pays this once per growth of its slots.
//
//go:noinline
func (p *Pool) growWarm() {
	w := make([]Stack, len(p.warm), max(p.totalSlots, 2*cap(p.warm), 16))
	copy(w, p.warm)
	p.warm = w
}

// countOp advances the operation-counted window.
func (p *Pool) countOp() {
	p.ops++
	if p.cfg.DecayOps > 0 && p.ops >= p.cfg.DecayOps {
		if p.peak == p.startInUse && p.inUse < p.startInUse {
			// A drain: every stack freed in this window was in use when
			// it began, and none was needed since. Releasing them now
			// would put syscalls in the middle of the burst (and, before
			// a Close, for nothing); see the package doc.
			p.stats.Drains++
			p.newWindow()
			return
		}
		p.closeWindow()
	}
}

// Tick closes the current window if Config.DecayTime has passed since it
// began (the first Tick only starts timing). It returns the number of
// stacks released. The scheduler calls it from its loop with the time it
// already has; no background goroutine is involved.
func (p *Pool) Tick(now time.Time) int {
	if p.cfg.DecayTime <= 0 {
		return 0
	}
	if p.windowStart.IsZero() {
		p.windowStart = now
		return 0
	}
	if now.Sub(p.windowStart) < p.cfg.DecayTime {
		return 0
	}
	p.windowStart = now
	return p.closeWindow()
}

// Trim closes the current window now: it keeps free stacks up to the
// window's peak and releases the rest. It returns the number of stacks
// released.
func (p *Pool) Trim() int { return p.closeWindow() }

// closeWindow releases free stacks beyond the window's peak and starts a new
// window whose peak is the current use.
func (p *Pool) closeWindow() int {
	keep := max(p.peak-p.inUse, 0)
	released := 0
	if excess := len(p.warm) - keep; excess > 0 {
		victims := p.warm[:excess] // the least recently returned
		for _, s := range victims {
			s.slab.warm--
			s.slab.state[s.slot] = slotReleased
		}
		// Slabs left with no stack in use or warm go back whole (munmap);
		// the victims elsewhere give back their pages (madvise).
		p.unmapIdleSlabs()
		p.madvise(victims)
		for _, s := range victims {
			if s.slab.pool != nil {
				p.cold = append(p.cold, s)
			}
		}
		p.warm = append(p.warm[:0], p.warm[excess:]...)
		released = excess
		p.stats.Trims++
		p.stats.StacksReleased += uint64(excess)
		p.stats.BytesReleased += uint64(excess) * uint64(p.stackSize)
	}
	p.newWindow()
	return released
}

// newWindow starts a window whose peak is the current use.
func (p *Pool) newWindow() {
	p.peak = p.inUse
	p.startInUse = p.inUse
	p.ops = 0
}

// madvise returns the pages of the given released stacks that still belong
// to a mapped slab to the kernel with madvise(MADV_DONTNEED), merging
// adjacent stacks into one call.
func (p *Pool) madvise(stacks []Stack) {
	type span struct {
		slab   *slab
		lo, hi uintptr
	}
	spans := make([]span, 0, len(stacks))
	for _, s := range stacks {
		if s.slab.pool == nil {
			continue // its slab was unmapped
		}
		spans = append(spans, span{s.slab, s.lo - p.trim, s.hi}) // the whole page-aligned stack part of the slot
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 0; i < len(spans); {
		sl, lo, hi := spans[i].slab, spans[i].lo, spans[i].hi
		j := i + 1
		for j < len(spans) && spans[j].slab == sl && spans[j].lo == hi {
			hi = spans[j].hi
			j++
		}
		mem := unsafe.Slice((*byte)(unsafe.Add(sl.base, lo-uintptr(sl.base))), hi-lo)
		if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
			// MADV_DONTNEED on our own private anonymous mapping cannot
			// fail short of a corrupted pool.
			panic(fmt.Sprintf("stackpool: madvise(MADV_DONTNEED) on [%#x, %#x): %v", lo, hi, err))
		}
		i = j
	}
}

// unmapIdleSlabs munmaps every slab none of whose stacks is in use or warm,
// and drops its slots from the cold list.
func (p *Pool) unmapIdleSlabs() {
	idle := false
	for _, sl := range p.slabs {
		if sl.inUse == 0 && sl.warm == 0 {
			idle = true
			break
		}
	}
	if !idle {
		return
	}
	kept := p.cold[:0]
	for _, s := range p.cold {
		if s.slab.inUse != 0 || s.slab.warm != 0 {
			kept = append(kept, s)
		}
	}
	clear(p.cold[len(kept):])
	p.cold = kept
	slabs := p.slabs[:0]
	for _, sl := range p.slabs {
		if sl.inUse != 0 || sl.warm != 0 {
			slabs = append(slabs, sl)
			continue
		}
		p.unmap(sl)
	}
	clear(p.slabs[len(slabs):])
	p.slabs = slabs
}

func (p *Pool) unmap(sl *slab) {
	if err := unix.MunmapPtr(sl.base, sl.size); err != nil {
		panic(fmt.Sprintf("stackpool: munmap of a slab at %#x (%d bytes): %v", sl.base, sl.size, err))
	}
	p.totalSlots -= len(sl.state)
	p.mapsUsed -= sl.maps
	allPoolMaps.Add(-int64(sl.maps))
	p.stats.SlabsUnmapped++
	p.stats.BytesUnmapped += uint64(sl.size)
	sl.pool = nil // a later Put of one of its stacks panics
}

// grow maps a new slab and adds its slots to the cold list.
func (p *Pool) grow() error {
	n := p.cfg.SlabStacks
	if n == 0 {
		n = min(max(p.totalSlots, minSlabStacks), maxSlabStacks)
	}
	guarded := p.cfg.Guard == GuardOn || (p.cfg.Guard == GuardAuto && !p.guardsFailed)
	maps := 1
	if guarded {
		maps = 2*n + 1 // guard/stack pairs, and the split may leave one more
		room := p.mapBudget
		if p.cfg.Guard == GuardAuto {
			// Guards stop while plainShare of the budget is still free,
			// so that the plain slabs after them have room: without it,
			// the guarded slabs (2n+1 mappings each) could fill the
			// budget to its last few mappings, and a pool that had to
			// go on unguarded failed a few plain slabs later (1024
			// stacks each): Yield n=262144's 262144 stacks failed or
			// not with where the last guarded slab happened to end.
			room -= p.mapBudget / plainShare
		}
		if int(allPoolMaps.Load())+maps > room {
			if p.cfg.Guard == GuardOn {
				return p.limitError(n, maps, true, nil)
			}
			guarded = false // GuardAuto: continue without guards
			maps = 1
			p.guardsFailed = true
		}
	}
	if !guarded && int(allPoolMaps.Load())+maps > p.mapBudget {
		return p.limitError(n, maps, false, nil)
	}
	sl := &slab{pool: p, slotSize: p.stackSize, maps: maps, state: make([]slotState, n)}
	if guarded {
		sl.guard = p.page
		sl.slotSize += p.page
	}
	sl.size = sl.slotSize * uintptr(n)
	mem, err := unix.MmapPtr(-1, 0, nil, sl.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return p.limitError(n, maps, guarded, fmt.Errorf("mmap of %d bytes: %w", sl.size, err))
	}
	sl.base = mem
	p.stats.SlabsMapped++
	if guarded {
		for i := 0; i < n; i++ {
			g := unsafe.Slice((*byte)(unsafe.Add(mem, uintptr(i)*sl.slotSize)), p.page)
			if err := unix.Mprotect(g, unix.PROT_NONE); err != nil {
				_ = unix.MunmapPtr(mem, sl.size)
				return p.limitError(n, maps, guarded, fmt.Errorf("mprotect of guard page %d: %w", i, err))
			}
		}
	}
	p.slabs = append(p.slabs, sl)
	p.totalSlots += n
	p.mapsUsed += maps
	allPoolMaps.Add(int64(maps))
	// Push in reverse so that Get hands out the slab's slots in address order.
	//
	// Every stack ends at its slot's top, so the lines a suspended
	// coroutine keeps hot (its fiber's Context at the top, the frames of
	// its suspended chain just below: under 1 KiB) sit at the same page
	// offsets in every stack. A page offset picks one of the L1's 64 sets
	// and, with the physical page's colour, one of 32 sets of the L2
	// (2 MiB, 16 ways, on the Xeon VM): 1000 stacks put ~31 lines into
	// each of those sets, so one round over 1000 coroutines evicts them
	// all before they are needed again.
	//
	// Rejected (session 9, measured, not kept): stack colouring, slot k's
	// stack ending (k mod C) × S bytes below its slot's top, which spreads
	// the hot lines over C times as many sets. It helps while the
	// coroutines' hot lines, once spread, fit in L2 (1000 of them: ~9 lines
	// each, 0.6 MiB) and hurts beyond, the more the wider the span:
	//   - C=16, S=64 (a span of 960 bytes) against none, interleaved, 12
	//     samples a cell (benchrun --scenario priority,shutdown / yield /
	//     spawn --impl stackful-asm --count 2 --adapt-budget 0, 6 rounds):
	//     Yield n=1000 21.95 -> 15.85 ns/switch (-28%), Priority n=1000
	//     107.8 -> 86.8 ns/wake (-19%); but Priority n=100000 2.49 -> 3.28
	//     µs (+32%, p=0.004), n=4096 210 -> 246 (~); Yield n=4096, 262144,
	//     Shutdown, Spawn alive=10000 and alive=1 unchanged.
	//   - A diagnostic build (this code with PrefetchTop, C and S from the
	//     environment), three layouts alternated over 4 rounds (8 samples
	//     each; medians): Yield n=4096
	//     33.2 ns uncoloured, 38.5 with C=32 S=64 (1984 bytes), 48.8 with
	//     C=32 S=192 (5952 bytes, session 8's layout: its unexplained
	//     Yield loss); Priority n=4096 203 / 290 / 368 ns; Yield n=1000
	//     22.0 / 16.5 / 17.2; Priority n=1000 112.6 / 86.5 / 86.9; Spawn
	//     alive=10000 pool=warm 366 / 329 / 309.
	//   - C=32, S=64 also made Memory n=100000 4551 -> 5064 B/coroutine:
	//     with up to 1984 bytes less room in the top page, a coroutine's
	//     1 KiB array and frames spill into a second one (C=16 S=64: 4552).
	// Why wider spans hurt past L2 is not pinned down (the VM exposes no
	// cache or TLB counters). Two candidates: uncoloured, the stacks'
	// lines thrash only among themselves in a few sets, which leaves the
	// rest of L2 to the records and the run queue, and spread they evict
	// those too; and a span over ~3 KiB pushes some stacks' hot lines out
	// of the top page or across a page boundary, two pages and page walks
	// per switch once the TLB no longer holds them.
	for i := n - 1; i >= 0; i-- {
		top := uintptr(sl.base) + uintptr(i+1)*sl.slotSize
		bottom := top - p.stackSize + p.trim
		p.cold = append(p.cold, Stack{lo: bottom, hi: top, slab: sl, slot: int32(i)})
	}
	return nil
}

// Stats returns the pool's counters and current sizes.
func (p *Pool) Stats() Stats {
	st := p.stats
	st.InUse = p.inUse
	st.Warm = len(p.warm)
	st.Cold = len(p.cold)
	st.Peak = p.peak
	st.Slabs = len(p.slabs)
	st.Maps = p.mapsUsed
	for _, sl := range p.slabs {
		if sl.guard != 0 {
			st.Guarded++
		}
	}
	return st
}

// Close unmaps all memory. It refuses while stacks are in use, because
// fibers may still be running or suspended on them.
func (p *Pool) Close() error {
	if p.inUse > 0 {
		return fmt.Errorf("stackpool: Close with %d stacks still in use; Put them back first (a suspended fiber's stack must not be unmapped)", p.inUse)
	}
	for _, sl := range p.slabs {
		p.unmap(sl)
	}
	p.slabs, p.warm, p.cold = nil, nil, nil
	return nil
}

// MapLimitError reports that the pool could not map stacks within the
// kernel's mapping limit (or that the kernel refused a mapping).
type MapLimitError struct {
	Stacks   int   // stacks in the slab that could not be mapped
	Maps     int   // mappings it would have needed
	Guarded  bool  // whether it had guard pages
	InUse    int   // mappings all pools held
	Budget   int   // mappings the pool may hold
	MapLimit int   // the limit planned against (Config.MaxMapCount or vm.max_map_count)
	Sysctl   int   // vm.max_map_count as read from /proc (the kernel's real limit)
	Err      error // the system call's error, nil if the budget stopped it first
}

func (e *MapLimitError) Error() string {
	var b strings.Builder
	if e.Err != nil {
		fmt.Fprintf(&b, "stackpool: cannot map a slab of %d stacks: %v", e.Stacks, e.Err)
		if !strings.Contains(e.Err.Error(), "cannot allocate memory") {
			return b.String()
		}
		fmt.Fprintf(&b, "; the likely cause is the kernel's per-process limit vm.max_map_count=%d", e.Sysctl)
	} else {
		fmt.Fprintf(&b, "stackpool: a slab of %d stacks needs %d more memory mappings, but the stack pools already hold %d of the %d they may use under the kernel limit vm.max_map_count=%d",
			e.Stacks, e.Maps, e.InUse, e.Budget, e.MapLimit)
	}
	if e.Guarded {
		limit := e.MapLimit
		if e.Err != nil {
			limit = e.Sysctl
		}
		fmt.Fprintf(&b, ". Guard pages split mappings, so each guarded stack costs 2 (about %d fit in the limit). Turn guards off (%s = GuardOff, or GuardAuto to use them only while they fit), or raise the limit: sysctl -w vm.max_map_count=<more>",
			limit/2, GuardOption)
	} else {
		fmt.Fprintf(&b, ". Put more stacks in each mapping (%s), or raise the limit: sysctl -w vm.max_map_count=<more>", SlabOption)
	}
	return b.String()
}

func (p *Pool) limitError(n, maps int, guarded bool, err error) error {
	return &MapLimitError{Stacks: n, Maps: maps, Guarded: guarded, InUse: int(allPoolMaps.Load()), Budget: p.mapBudget, MapLimit: p.mapLimit, Sysctl: readMapLimit(), Err: err}
}

// readMapLimit reads vm.max_map_count, falling back to the kernel default.
func readMapLimit() int {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return defaultMapLimit
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return defaultMapLimit
	}
	return n
}

// countMaps returns the number of mappings the process has now (lines of
// /proc/self/maps), or 0 if unknown.
func countMaps() int {
	mapCounts.Add(1)
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
