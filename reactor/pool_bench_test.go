package reactor

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWorkRoundTrip: one empty job submitted, run on a pool thread, and
// its completion delivered by Tick — the fixed cost of going through the
// pool (eventfd wakeup included), one job in flight at a time.
func BenchmarkWorkRoundTrip(b *testing.B) {
	for _, locked := range []bool{true, false} {
		name := "workers=locked"
		if !locked {
			name = "workers=goroutines"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { poolLockThreads = old }(poolLockThreads)
			poolLockThreads = locked
			benchWorkRoundTrip(b)
		})
	}
}

func benchWorkRoundTrip(b *testing.B) {
	l := newLoop(b, Options{PoolThreads: 1})
	fired := 0
	w := l.NewWork(func() { fired++ })
	job := JobFunc(func() {})
	b.ReportAllocs()
	for b.Loop() {
		want := fired + 1
		if err := w.Start(job); err != nil {
			b.Fatal(err)
		}
		for fired != want {
			if _, err := l.Tick(false); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFSReqPread4K: 4 KiB preads of a cached file through the pool, one
// at a time; the page cache holds the file, so this is the path's cost, not
// the disk's.
func BenchmarkFSReqPread4K(b *testing.B) {
	l := newLoop(b, Options{PoolThreads: 1})
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	f := NewFile(int(fd.Fd()), path)
	fired := 0
	r := l.NewFSReq(func() { fired++ })
	buf := make([]byte, 4096)
	var off int64
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		want := fired + 1
		if err := r.StartPread(f, buf, off); err != nil {
			b.Fatal(err)
		}
		for fired != want {
			if _, err := l.Tick(false); err != nil {
				b.Fatal(err)
			}
		}
		if n, err := r.Result(); err != nil || n != 4096 {
			b.Fatal(n, err)
		}
		off = (off + 4096) % (1 << 20)
	}
}

// BenchmarkFSReqPread4KInFlight: the same reads with 64 in flight on 4
// threads — the throughput side (ns/op is per read).
func BenchmarkFSReqPread4KInFlight(b *testing.B) {
	l := newLoop(b, Options{PoolThreads: 4})
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	f := NewFile(int(fd.Fd()), path)
	const inFlight = 64
	reqs := make([]*FSReq, inFlight)
	bufs := make([][]byte, inFlight)
	done, started := 0, 0
	var off int64
	start := func(i int) {
		if err := reqs[i].StartPread(f, bufs[i], off); err != nil {
			b.Fatal(err)
		}
		off = (off + 4096) % (1 << 20)
		started++
	}
	for i := range reqs {
		bufs[i] = make([]byte, 4096)
		reqs[i] = l.NewFSReq(func() {
			if n, err := reqs[i].Result(); err != nil || n != 4096 {
				b.Fatal(n, err)
			}
			done++
			if started < b.N {
				start(i)
			}
		})
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range reqs {
		if started < b.N {
			start(i)
		}
	}
	for done < b.N {
		if _, err := l.Tick(false); err != nil {
			b.Fatal(err)
		}
	}
}
