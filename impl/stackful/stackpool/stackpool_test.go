package stackpool

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/corobench/corobench/internal/selfexec"

	"golang.org/x/sys/unix"
)

func newPool(tb testing.TB, cfg Config) *Pool {
	tb.Helper()
	p, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if p.inUse == 0 {
			if err := p.Close(); err != nil {
				tb.Error(err)
			}
		}
	})
	return p
}

func mustGet(tb testing.TB, p *Pool) Stack {
	tb.Helper()
	s, err := p.Get()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// stackBytes returns the stack's usable memory as a slice.
func stackBytes(s Stack) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(s.slab.base, s.lo-uintptr(s.slab.base))), s.Size())
}

// resident reports how many pages of s are resident (mincore).
func resident(tb testing.TB, s Stack) int {
	tb.Helper()
	mem := stackBytes(s)
	// mincore wants a page-aligned start: the stack part of the slot.
	start := unsafe.Slice((*byte)(unsafe.Add(s.slab.base, s.lo-s.slab.pool.trim-uintptr(s.slab.base))), len(mem)+int(s.slab.pool.trim))
	vec := make([]byte, (len(start)+os.Getpagesize()-1)/os.Getpagesize())
	// x/sys/unix has no Mincore wrapper on linux.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&start[0])), uintptr(len(start)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		tb.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestSizes(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct{ req, usable int }{
		{0, DefaultStackSize - powerOfTwoTrim},
		{64 << 10, 64<<10 - 16},
		{60 << 10, 60 << 10},
		{5000, 2*page - 16},
		{page, page - 16},
	} {
		for _, guard := range []GuardMode{GuardOff, GuardOn} {
			p := newPool(t, Config{StackSize: tc.req, Guard: guard, SlabStacks: 4})
			if p.Usable() != tc.usable {
				t.Errorf("StackSize %d: Usable %d, want %d", tc.req, p.Usable(), tc.usable)
			}
			s := mustGet(t, p)
			size := s.Size()
			if size != tc.usable || size&(size-1) == 0 || s.Lo()%16 != 0 || s.Hi()%16 != 0 {
				t.Errorf("StackSize %d guard %v: bounds [%#x, %#x) size %d; want size %d, not a power of two, 16-byte aligned", tc.req, guard, s.Lo(), s.Hi(), size, tc.usable)
			}
			mem := stackBytes(s)
			mem[0], mem[len(mem)-1] = 1, 2 // both ends are writable
			p.Put(s)
		}
	}
	for _, bad := range []Config{{StackSize: 100}, {Guard: 7}, {SlabStacks: -1}, {DecayTime: -time.Second}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted a bad config", bad)
		}
	}
}

func TestReuse(t *testing.T) {
	p := newPool(t, Config{StackSize: 16 << 10, DecayOps: -1})
	a, b, c := mustGet(t, p), mustGet(t, p), mustGet(t, p)
	if st := p.Stats(); st.Misses != 3 || st.Hits != 0 || st.InUse != 3 || st.SlabsMapped != 1 {
		t.Fatalf("after 3 fresh Gets: %+v", st)
	}
	if a.Lo() == b.Lo() || b.Lo() == c.Lo() {
		t.Fatal("two Gets returned the same stack")
	}
	p.Put(a)
	p.Put(b)
	if got := mustGet(t, p); got.Lo() != b.Lo() {
		t.Errorf("Get after Put(a), Put(b) returned %#x, want the most recently returned b %#x", got.Lo(), b.Lo())
	}
	if got := mustGet(t, p); got.Lo() != a.Lo() {
		t.Errorf("second Get returned %#x, want a %#x", got.Lo(), a.Lo())
	}
	if st := p.Stats(); st.Hits != 2 || st.Misses != 3 || st.InUse != 3 || st.Warm != 0 {
		t.Fatalf("after 2 reuses: %+v", st)
	}
}

// TestPeekHi: PeekHi(d) names the stack the (d+1)-th Get from now hands
// out, warm ones first, then the cold ones of the slab, and 0 past the
// free stacks (the pool would grow); it changes nothing.
func TestPeekHi(t *testing.T) {
	p := newPool(t, Config{StackSize: 16 << 10, DecayOps: -1, SlabStacks: 4})
	if h := p.PeekHi(0); h != 0 {
		t.Fatalf("PeekHi(0) on an empty pool = %#x, want 0", h)
	}
	a, b := mustGet(t, p), mustGet(t, p) // a slab of 4: 2 cold left
	p.Put(a)
	p.Put(b)
	// Free now: warm b, a (most recent first), then the 2 cold ones.
	var want [4]uintptr
	for d := range want {
		want[d] = p.PeekHi(d)
	}
	if h := p.PeekHi(len(want)); h != 0 {
		t.Errorf("PeekHi(%d) past the free stacks = %#x, want 0", len(want), h)
	}
	if st := p.Stats(); st.Warm != 2 || st.Cold != 2 || st.InUse != 0 {
		t.Fatalf("PeekHi changed the pool: %+v", st)
	}
	for d, w := range want {
		if got := mustGet(t, p).Hi(); got != w || w == 0 {
			t.Errorf("Get %d returned the stack with Hi %#x, PeekHi(%d) said %#x", d+1, got, d, w)
		}
	}
	if want[0] != b.Hi() || want[1] != a.Hi() {
		t.Errorf("PeekHi(0), PeekHi(1) = %#x, %#x, want the warm b %#x, a %#x", want[0], want[1], b.Hi(), a.Hi())
	}
}

func TestPutMisuse(t *testing.T) {
	p := newPool(t, Config{DecayOps: -1})
	other := newPool(t, Config{DecayOps: -1})
	s := mustGet(t, p)
	p.Put(s)
	mustPanic(t, "double Put", func() { p.Put(s) })
	mustPanic(t, "zero Stack", func() { p.Put(Stack{}) })
	s2 := mustGet(t, p)
	mustPanic(t, "foreign Stack", func() { other.Put(s2) })
	if err := p.Close(); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Close with a stack in use: %v, want a refusal", err)
	}
	p.Put(s2)
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

// TestTrimExplicit checks that Trim keeps the window's peak, then releases
// the rest: munmap for idle slabs, madvise (pages no longer resident) for
// free slots of a slab still in use.
func TestTrimExplicit(t *testing.T) {
	p := newPool(t, Config{StackSize: 16 << 10, SlabStacks: 8, DecayOps: -1, Guard: GuardOff})
	var stacks []Stack
	for i := 0; i < 12; i++ { // a full slab of 8 and 4 of a second
		s := mustGet(t, p)
		stackBytes(s)[s.Size()-1] = 1 // touch the top page, as a fiber would
		stacks = append(stacks, s)
	}
	for _, s := range stacks[2:] { // keep 2 of the first slab in use
		p.Put(s)
	}
	if n := p.Trim(); n != 0 { // peak was 12: everything is kept
		t.Fatalf("first Trim released %d stacks, want 0 (the window's peak was 12)", n)
	}
	if resident(t, stacks[5]) == 0 {
		t.Fatal("a warm stack has no resident page before trimming")
	}
	if n := p.Trim(); n != 10 { // peak is now 2 = in use: all 10 free go
		t.Fatalf("second Trim released %d stacks, want 10", n)
	}
	st := p.Stats()
	if st.Trims != 1 || st.StacksReleased != 10 || st.BytesReleased != 10*16<<10 || st.Slabs != 1 || st.SlabsUnmapped != 1 || st.Warm != 0 || st.Cold != 6 {
		t.Fatalf("after trimming: %+v; want 1 trim, 10 stacks released, the second slab unmapped, 6 cold slots left", st)
	}
	for _, s := range stacks[2:8] {
		if r := resident(t, s); r != 0 {
			t.Fatalf("released stack at %#x still has %d resident pages", s.Lo(), r)
		}
	}
	// A released stack is reused as a miss (its memory is not resident)
	// and is usable.
	s := mustGet(t, p)
	stackBytes(s)[0] = 1
	if st := p.Stats(); st.Misses != 13 || st.Hits != 0 {
		t.Fatalf("Get of a released stack: %+v, want it counted as a miss", st)
	}
	p.Put(s)
	p.Put(stacks[0])
	p.Put(stacks[1])
	p.Trim() // peak 3: keep
	p.Trim() // peak 0: release all, unmap the slab
	if st := p.Stats(); st.Slabs != 0 || st.Cold != 0 || st.Warm != 0 || st.SlabsUnmapped != 2 {
		t.Fatalf("after releasing everything: %+v", st)
	}
}

// TestTrimByOps checks the operation-counted window: a burst is kept for the
// rest of its window and released at the end of the next quiet one.
func TestTrimByOps(t *testing.T) {
	p := newPool(t, Config{StackSize: 8 << 10, SlabStacks: 64, DecayOps: 100, Guard: GuardOff})
	var burst []Stack
	for i := 0; i < 40; i++ {
		burst = append(burst, mustGet(t, p))
	}
	for _, s := range burst {
		p.Put(s)
	} // 80 ops so far, peak 40
	for i := 0; i < 10; i++ { // ops 81..100: the window closes at op 100
		p.Put(mustGet(t, p))
	}
	if st := p.Stats(); st.Trims != 0 || st.Warm != 40 {
		t.Fatalf("end of the burst's window: %+v; want all 40 kept (peak 40)", st)
	}
	for i := 0; i < 50; i++ { // a quiet window with one stack in use at most
		p.Put(mustGet(t, p))
	}
	st := p.Stats()
	if st.Trims != 1 || st.StacksReleased != 39 || st.Warm != 1 {
		t.Fatalf("end of the quiet window: %+v; want 39 of 40 released, 1 kept (the quiet window's peak)", st)
	}
}

// TestPutNeverReleasesItsStack pins what a fiber giving back its own stack
// before its last switch relies on (stackful's asmBackend.putDying): a Put
// never releases the memory of the stack it is given, and never unmaps its
// slab, whichever window closes in it. Random Gets and Puts under short
// operation-counted windows (so that windows close in Puts of every kind:
// drains, trims, rises), each stack marked on its top word when taken; after
// each Put the stack just returned must still hold its mark.
func TestPutNeverReleasesItsStack(t *testing.T) {
	for _, decay := range []int{1, 2, 3, 5, 8} {
		p := newPool(t, Config{StackSize: 8 << 10, SlabStacks: 4, DecayOps: decay, Guard: GuardOff})
		rng := uint64(decay)*0x9e3779b97f4a7c15 + 1
		var held []Stack
		for op := 0; op < 4000; op++ {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			if len(held) == 0 || (len(held) < 40 && rng%3 != 0) {
				s := mustGet(t, p)
				top := stackBytes(s)[s.Size()-8:]
				*(*uint64)(unsafe.Pointer(&top[0])) = uint64(s.hi)
				held = append(held, s)
				continue
			}
			i := int(rng>>8) % len(held)
			s := held[i]
			held[i] = held[len(held)-1]
			held = held[:len(held)-1]
			p.Put(s)
			if s.slab.pool == nil {
				t.Fatalf("DecayOps %d, op %d: the Put unmapped its own stack's slab", decay, op)
			}
			if got := *(*uint64)(unsafe.Pointer(&stackBytes(s)[s.Size()-8])); got != uint64(s.hi) {
				t.Fatalf("DecayOps %d, op %d: the stack's top word reads %#x after its Put, want its mark %#x (the Put released its memory)", decay, op, got, uint64(s.hi))
			}
		}
		if st := p.Stats(); st.Trims == 0 || st.Drains == 0 {
			t.Errorf("DecayOps %d: %d trims and %d drains; the test means to close windows of both kinds in Puts", decay, st.Trims, st.Drains)
		}
		for _, s := range held {
			p.Put(s)
		}
	}
}

// TestDrainIsNotTrimmed checks the burst rule: operation-counted windows in
// which use only falls (a mass shutdown) release nothing, even the stacks
// freed in an earlier window that the ordinary rule would release; the first
// window in which use stops falling gives the memory back.
func TestDrainIsNotTrimmed(t *testing.T) {
	p := newPool(t, Config{StackSize: 8 << 10, SlabStacks: 512, DecayOps: 100, Guard: GuardOff})
	var stacks []Stack
	for i := 0; i < 250; i++ { // windows 1 and 2: use rises to 200, window 3 starts
		stacks = append(stacks, mustGet(t, p))
	}
	for i := 0; i < 50; i++ { // window 3 ends: peak 250, 50 freed and kept
		p.Put(stacks[len(stacks)-1])
		stacks = stacks[:len(stacks)-1]
	}
	if st := p.Stats(); st.Trims != 0 || st.Drains != 0 || st.Warm != 50 {
		t.Fatalf("after the spawns: %+v; want no trim, no drain, 50 warm", st)
	}
	// Windows 4 and 5 free 200 more, use falling all the way. The ordinary
	// rule would keep only window 5's peak (100) at its end, releasing the
	// 100 stacks freed in window 4 and the 50 before.
	for len(stacks) > 0 {
		p.Put(stacks[len(stacks)-1])
		stacks = stacks[:len(stacks)-1]
	}
	st := p.Stats()
	if st.Trims != 0 || st.StacksReleased != 0 || st.Drains != 2 || st.Warm != 250 || st.InUse != 0 {
		t.Fatalf("after the drain: %+v; want 2 drain windows, nothing released, all 250 warm", st)
	}
	// A window in which use rises again (one stack at a time) is not a
	// drain: it releases what it did not need.
	for i := 0; i < 50; i++ {
		p.Put(mustGet(t, p))
	}
	st = p.Stats()
	if st.Trims != 1 || st.StacksReleased != 249 || st.Drains != 2 || st.Warm != 1 {
		t.Fatalf("after a quiet window: %+v; want 249 of 250 released (its peak was 1), still 2 drains", st)
	}
}

// TestRiseInWindowIsNotADrain checks the drain test's other half: a window
// that ends below its start but rose above it on the way is ordinary and
// trims to its peak.
func TestRiseInWindowIsNotADrain(t *testing.T) {
	p := newPool(t, Config{StackSize: 8 << 10, SlabStacks: 512, DecayOps: 100, Guard: GuardOff})
	var stacks []Stack
	get := func(k int) {
		for range k {
			stacks = append(stacks, mustGet(t, p))
		}
	}
	put := func(k int) {
		for range k {
			p.Put(stacks[len(stacks)-1])
			stacks = stacks[:len(stacks)-1]
		}
	}
	get(60) // window 1: peak 60, ends at 20 in use with 40 warm (kept: peak 60)
	put(40)
	if st := p.Stats(); st.Trims != 0 || st.Drains != 0 || st.Warm != 40 || st.InUse != 20 {
		t.Fatalf("window 1: %+v; want 20 in use, 40 warm, nothing released", st)
	}
	put(10) // window 2 starts at 20: down to 10, up to 40 (above the start), down to 0
	get(30)
	put(40)
	for range 10 {
		get(1)
		put(1)
	}
	st := p.Stats()
	if st.Drains != 0 || st.Trims != 1 || st.StacksReleased != 20 || st.Warm != 40 {
		t.Fatalf("window 2: %+v; want an ordinary window: peak 40 kept, 20 of 60 free released", st)
	}
}

func TestTrimByTime(t *testing.T) {
	p := newPool(t, Config{StackSize: 8 << 10, DecayOps: -1, DecayTime: time.Second, Guard: GuardOff})
	t0 := time.Unix(1000, 0)
	a, b := mustGet(t, p), mustGet(t, p)
	p.Put(a)
	p.Put(b)
	if n := p.Tick(t0); n != 0 {
		t.Fatalf("first Tick released %d", n)
	}
	if n := p.Tick(t0.Add(500 * time.Millisecond)); n != 0 {
		t.Fatalf("Tick before DecayTime released %d", n)
	}
	if n := p.Tick(t0.Add(time.Second)); n != 0 { // closes the window with peak 2
		t.Fatalf("Tick closing the busy window released %d, want 0", n)
	}
	if n := p.Tick(t0.Add(2 * time.Second)); n != 2 {
		t.Fatalf("Tick closing the quiet window released %d, want 2", n)
	}
}

// mapsPerms returns the permissions of the mapping containing addr, from
// /proc/self/maps.
func mapsPerms(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fields[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		if uint64(addr) >= l && uint64(addr) < h {
			return fields[1]
		}
	}
	return ""
}

func TestGuards(t *testing.T) {
	on := newPool(t, Config{StackSize: 16 << 10, Guard: GuardOn, SlabStacks: 4})
	s := mustGet(t, on)
	below := s.Lo() - on.trim - 1 // last byte of the guard page
	if perm := mapsPerms(t, below); perm != "---p" {
		t.Errorf("guard page below a guarded stack has permissions %q, want ---p", perm)
	}
	if perm := mapsPerms(t, s.Lo()); perm != "rw-p" {
		t.Errorf("guarded stack has permissions %q, want rw-p", perm)
	}
	if st := on.Stats(); st.Guarded != 1 || st.Maps != 2*4+1 {
		t.Errorf("guarded pool stats %+v, want 1 guarded slab counted as 9 mappings", st)
	}
	on.Put(s)

	off := newPool(t, Config{StackSize: 16 << 10, Guard: GuardOff, SlabStacks: 4})
	a, b := mustGet(t, off), mustGet(t, off)
	if b.Lo()-off.trim != a.Hi() || mapsPerms(t, b.Lo()-off.trim-1) != "rw-p" {
		t.Errorf("unguarded slots are not packed back to back: a=[%#x,%#x) b=[%#x,%#x)", a.Lo(), a.Hi(), b.Lo(), b.Hi())
	}
	if st := off.Stats(); st.Guarded != 0 || st.Maps != 1 {
		t.Errorf("unguarded pool stats %+v, want 1 mapping", st)
	}
	off.Put(a)
	off.Put(b)
}

// TestMapLimitSimulated plans against a low MaxMapCount: GuardOn fails with
// an error naming the sysctl and the option, GuardAuto continues without
// guards, GuardOff fits many more stacks.
func TestMapLimitSimulated(t *testing.T) {
	forgetMapCount()                // plan with a count made now, as limit below is
	limit := countMaps() + 256 + 40 // New reserves 256 below a small limit: a budget of about 40 mappings
	get := func(p *Pool, n int) (int, error) {
		for i := 0; i < n; i++ {
			if _, err := p.Get(); err != nil {
				return i, err
			}
		}
		return n, nil
	}
	on := newPool(t, Config{StackSize: 8 << 10, Guard: GuardOn, SlabStacks: 8, MaxMapCount: limit})
	got, err := get(on, 100)
	var mle *MapLimitError
	if !errors.As(err, &mle) || got > 16 || got < 8 {
		t.Fatalf("GuardOn under a budget of ~40 mappings: got %d stacks, error %v; want 8-16 stacks then a MapLimitError", got, err)
	}
	for _, want := range []string{"vm.max_map_count", GuardOption, "GuardOff", "sysctl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("map-limit error does not mention %q: %v", want, err)
		}
	}
	on.inUse = 0 // let Close unmap (the test does not Put them back)
	if err := on.Close(); err != nil {
		t.Fatal(err)
	}

	auto := newPool(t, Config{StackSize: 8 << 10, Guard: GuardAuto, SlabStacks: 8, MaxMapCount: limit})
	// Two guarded slabs (2×17 mappings) fit the budget of ~40, then plain
	// slabs of one mapping each: 48 stacks need 2 guarded + 4 plain.
	if got, err := get(auto, 48); err != nil || got != 48 {
		t.Fatalf("GuardAuto: %d stacks, %v; want 48 (guards dropped when over budget)", got, err)
	}
	if st := auto.Stats(); st.Guarded == 0 || st.Guarded == st.Slabs {
		t.Errorf("GuardAuto stats %+v: want some guarded slabs, then unguarded ones", st)
	}
	auto.inUse = 0
	if err := auto.Close(); err != nil {
		t.Fatal(err)
	}

	off := newPool(t, Config{StackSize: 8 << 10, Guard: GuardOff, SlabStacks: 8, MaxMapCount: limit})
	got, err = get(off, 1000)
	if !errors.As(err, &mle) || got < 8*30 || !strings.Contains(err.Error(), SlabOption) {
		t.Fatalf("GuardOff: %d stacks, %v; want about 40 slabs then an error naming %s", got, err, SlabOption)
	}
	off.inUse = 0
	if err := off.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGuardAutoLeavesRoomForPlainSlabs: under any budget, a GuardAuto pool
// stops guarding while an eighth of the budget is still free, so that when
// it runs out, plain slabs hold that eighth: the guarded slabs never take
// the budget to its last mappings (they did: a budget that was a multiple
// of a guarded slab's 17 mappings left no room for a single plain slab).
func TestGuardAutoLeavesRoomForPlainSlabs(t *testing.T) {
	for extra := 30; extra <= 60; extra++ {
		forgetMapCount()
		p := newPool(t, Config{StackSize: 8 << 10, Guard: GuardAuto, SlabStacks: 8, MaxMapCount: countMaps() + 256 + extra})
		var err error
		for i := 0; i < 10000 && err == nil; i++ {
			_, err = p.Get()
		}
		var mle *MapLimitError
		if !errors.As(err, &mle) {
			t.Fatalf("budget of ~%d mappings: %v, want a MapLimitError at last", extra, err)
		}
		st := p.Stats()
		if plain := st.Slabs - st.Guarded; plain < p.mapBudget/8 || st.Guarded == 0 {
			t.Errorf("budget %d: %d guarded and %d plain slabs when the pool ran out; want some guarded and at least %d plain (an eighth of the budget)", p.mapBudget, st.Guarded, plain, p.mapBudget/8)
		}
		p.inUse = 0
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// forgetMapCount drops the process's count of its mappings: the next New
// counts afresh.
func forgetMapCount() {
	processMaps.mu.Lock()
	processMaps.c = mapCount{}
	processMaps.mu.Unlock()
}

// TestNewCountsMapsSeldom: New plans against the process's mappings, but
// reads /proc/self/maps at most once per mapCountAge, not once per pool (a
// scheduler per coroutine made one read per coroutine); a count that old
// is made again, so the plan follows mappings the process made since.
func TestNewCountsMapsSeldom(t *testing.T) {
	// A stopped clock: the pools below are made "at once" however slow
	// the machine (an emulator, a loaded CI host).
	at := time.Now()
	countClock = func() time.Time { return at }
	defer func() { countClock = time.Now }()
	forgetMapCount()
	const limit = 1 << 20
	before := mapCounts.Load()
	first := newPool(t, Config{MaxMapCount: limit})
	for i := 0; i < 100; i++ {
		newPool(t, Config{MaxMapCount: limit})
	}
	if got := mapCounts.Load() - before; got != 1 {
		t.Fatalf("101 pools made at once read /proc/self/maps %d times, want once", got)
	}

	// 64 more mappings outside the pools: every other page of a mapping
	// made inaccessible splits it into 2×64+1 (at least 64 more).
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 129*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := 1; i < 129; i += 2 {
		if err := unix.Mprotect(mem[i*page:(i+1)*page], unix.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	same := newPool(t, Config{MaxMapCount: limit})
	if same.mapBudget != first.mapBudget {
		t.Errorf("a pool made within mapCountAge of the count planned a budget of %d mappings, the first %d: want the same count", same.mapBudget, first.mapBudget)
	}
	// Age the count: the next New counts again and sees the new mappings.
	at = at.Add(mapCountAge)
	later := newPool(t, Config{MaxMapCount: limit})
	if got := mapCounts.Load() - before; got != 2 {
		t.Errorf("a New after the count aged made %d reads in all, want 2", got)
	}
	if later.mapBudget > first.mapBudget-64 {
		t.Errorf("after 64 more mappings outside the pools and an aged count, a pool planned a budget of %d mappings, the first %d: want at least 64 fewer", later.mapBudget, first.mapBudget)
	}
}

// TestMassPutAllocatesOnce: returning every stack of a pool (a mass
// shutdown) grows the warm list once, to the pool's size, not by
// append's doublings (each a copy of the list so far).
//
// Two checks. The list's backing array, read after every Put, is one
// array for the whole release (a plain append moved it 14 times, growWarm
// doubling from 16 instead of sizing to the pool 8): exact, and only the
// pool's doing. And the release allocates at most once, counted with
// runtime.MemStats.Mallocs, so that a Put that allocates anything else is
// caught too. Mallocs counts the whole process, and the runtime allocates
// on its own: under load, a few runs in a thousand counted 6 more, an OS
// thread (runtime.allocm: the m, its g0 and signal g, a weak pointer and
// two profiling stacks) that the runtime started as ReadMemStats's
// stop-the-world ended (startTheWorld → wakep → newm; seen with
// MemProfileRate=1). Such allocations only ever add to the count, while
// the release's own are the same on every fresh pool: so the count checked
// is the fewest over a few attempts, the release's own unless every
// attempt is hit. A Put that allocates still fails every attempt (one that
// formatted a string every 512th Put read 24 in each of the 5).
func TestMassPutAllocatesOnce(t *testing.T) {
	const attempts = 5
	fewest := ^uint64(0)
	for a := 0; a < attempts && fewest > 1; a++ {
		allocs, arrays := massPut(t)
		if arrays != 1 {
			t.Fatalf("putting 4096 stacks back moved the warm list %d times; want it grown once, to the pool's size, and never moved after", arrays-1)
		}
		t.Logf("attempt %d: %d allocations", a+1, allocs)
		fewest = min(fewest, allocs)
	}
	if fewest > 1 {
		t.Errorf("putting 4096 stacks back made at least %d allocations in each of %d attempts; want 1 (the warm list grown once to the pool's size)", fewest, attempts)
	}
}

// massPut gets every stack of a fresh pool of 4096, then puts them all
// back; it returns the process's allocations during the Puts and the
// number of backing arrays the warm list had after them.
func massPut(t *testing.T) (allocs uint64, arrays int) {
	const n = 4096
	p := newPool(t, Config{StackSize: 4096, Guard: GuardOff, DecayOps: -1})
	stacks := make([]Stack, n)
	for i := range stacks {
		stacks[i] = mustGet(t, p)
	}
	// Not testing.AllocsPerRun: its warm-up pass would grow the list
	// before it counts.
	var m0, m1 runtime.MemStats
	var last *Stack
	runtime.ReadMemStats(&m0)
	for _, s := range stacks {
		p.Put(s)
		if w := unsafe.SliceData(p.warm); w != last {
			arrays++
			last = w
		}
	}
	runtime.ReadMemStats(&m1)
	return m1.Mallocs - m0.Mallocs, arrays
}

const childEnv = "STACKPOOL_TEST_CHILD"

// TestChildExhaust is run as a child process by TestRealMapLimit: it maps
// guarded stacks until the kernel refuses, prints the error and exits.
func TestChildExhaust(t *testing.T) {
	if os.Getenv(childEnv) != "exhaust" {
		t.Skip("runs only as a child process of TestRealMapLimit")
	}
	// Plan against a limit far above the real one, so that the kernel, not
	// the budget, stops the pool.
	p, err := New(Config{StackSize: 4096, Guard: GuardOn, SlabStacks: 64, MaxMapCount: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := p.Get(); err != nil {
			fmt.Fprintf(os.Stderr, "after %d guarded stacks: %v\n", n, err)
			os.Exit(3)
		}
		n++
	}
}

// TestRealMapLimit exhausts vm.max_map_count for real, in a child process,
// and checks that the error names the sysctl.
func TestRealMapLimit(t *testing.T) {
	if readMapLimit() > 1<<20 {
		t.Skipf("vm.max_map_count is %d: exhausting it would take too long", readMapLimit())
	}
	out, err := selfexec.CombinedOutput([]string{"-test.run=^TestChildExhaust$"}, childEnv+"=exhaust")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "vm.max_map_count") || !strings.Contains(string(out), GuardOption) {
		t.Fatalf("child: %v, want exit 3 and an error naming vm.max_map_count and %s; output:\n%s", err, GuardOption, out)
	}
	t.Logf("child: %s", strings.TrimSpace(string(out)))
}

// rss returns the process's resident set size in bytes (/proc/self/statm),
// after returning the Go heap's free memory to the OS so that garbage does
// not hide the change being measured.
func rss(tb testing.TB) int64 {
	tb.Helper()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// bigTestsEnv opts in to the tests that need gigabytes of memory.
const bigTestsEnv = "COROBENCH_BIG_TESTS"

// TestMillionStacks allocates a million one-page stacks in slab mode, well
// under vm.max_map_count, writes to every 16th (as a running fiber would),
// returns them all and trims: the slabs are unmapped and the memory is gone
// from the resident set.
//
// A million stacks map 4 GiB. Only every 16th page is touched (256 MiB
// resident), but where transparent huge pages are "always" a touch faults
// in a whole 2 MiB page, and the test then needs about 4.5 GiB. So by
// default it runs 128k stacks (512 MiB mapped: at most that resident), the
// same checks at an eighth of the size; COROBENCH_BIG_TESTS=1 runs the
// million. Under -race it uses 64k (the instrumented run takes over 15 s
// for a million).
func TestMillionStacks(t *testing.T) {
	n := 1 << 17
	switch {
	case raceEnabled:
		n = 1 << 16
	case os.Getenv(bigTestsEnv) == "1":
		n = 1 << 20
	default:
		t.Logf("%d stacks; %s=1 runs a million (4 GiB mapped, up to 4.5 GiB resident with transparent huge pages)", n, bigTestsEnv)
	}
	const touchEvery = 16
	start := time.Now()
	p := newPool(t, Config{StackSize: 4096, Guard: GuardOff, DecayOps: -1})
	rss0 := rss(t)
	stacks := make([]Stack, n)
	for i := range stacks {
		stacks[i] = mustGet(t, p)
		if i%touchEvery == 0 {
			stackBytes(stacks[i])[stacks[i].Size()-8] = 1
		}
	}
	rss1 := rss(t)
	st := p.Stats()
	maps := countMaps()
	if st.InUse != n || st.Maps > 2000 || maps >= readMapLimit() {
		t.Fatalf("%d stacks: %+v, process mappings %d; want them in at most 2000 slabs", n, st, maps)
	}
	for _, s := range stacks {
		p.Put(s)
	}
	// The slice's own memory (MiBs, next to 32 MiB touched at 128k
	// stacks) must not count as stack memory not given back.
	stacks = nil
	p.Trim() // the window's peak was n: kept
	released := p.Trim()
	rss2 := rss(t)
	st = p.Stats()
	if released != n || st.Slabs != 0 || st.Warm != 0 {
		t.Fatalf("after trimming: released %d, %+v; want all %d released and every slab unmapped", released, st, n)
	}
	touched := int64(n / touchEvery * os.Getpagesize())
	if raceEnabled {
		t.Logf("RSS %d -> %d -> %d MiB not checked under -race (shadow memory of the Go heap)", rss0>>20, rss1>>20, rss2>>20)
	} else if rss1-rss0 < touched*9/10 || rss1-rss2 < touched*3/4 {
		// Going down, the Go heap keeps a few MiB that the scavenger has
		// not returned yet: hence 3/4, not 9/10; stacks not released
		// would leave the drop near zero.
		t.Fatalf("RSS before %d MiB, with %d stacks (%d MiB touched) %d MiB, after release %d MiB: the touched pages did not come and go", rss0>>20, n, touched>>20, rss1>>20, rss2>>20)
	}
	t.Logf("%d stacks of %d bytes: %d slabs (%d mappings in the process, limit %d); RSS %d MiB -> %d MiB (%d MiB touched) -> %d MiB after release; %v",
		n, p.Usable(), st.SlabsUnmapped, maps, readMapLimit(), rss0>>20, rss1>>20, touched>>20, rss2>>20, time.Since(start).Round(time.Millisecond))
}

// BenchmarkGetPut compares a pooled stack (Get+Put of a warm stack) with a
// fresh one (mmap + mprotect of a guard page + munmap), both for 64 KiB
// stacks. The "touch" variants write the stack's top word, as a starting
// fiber does: a fresh mapping then also pays a page fault.
func BenchmarkGetPut(b *testing.B) {
	const size = 64 << 10
	page := os.Getpagesize()
	for _, touch := range []bool{false, true} {
		name := map[bool]string{false: "", true: "/touch"}[touch]
		b.Run("pooled"+name, func(b *testing.B) {
			p := newPool(b, Config{StackSize: size, DecayOps: -1})
			for i := 0; i < b.N; i++ {
				s, err := p.Get()
				if err != nil {
					b.Fatal(err)
				}
				if touch {
					stackBytes(s)[s.Size()-8]++
				}
				p.Put(s)
			}
			if st := p.Stats(); st.Hits+st.Misses != uint64(b.N) {
				b.Fatalf("stats %+v", st)
			}
		})
		b.Run("fresh-mmap-mprotect-munmap"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				mem, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					b.Fatal(err)
				}
				if err := unix.Mprotect(mem[:page], unix.PROT_NONE); err != nil {
					b.Fatal(err)
				}
				if touch {
					mem[len(mem)-8]++
				}
				if err := unix.Munmap(mem); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
