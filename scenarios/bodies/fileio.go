package bodies

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/corobench/corobench/impl/stackless"
	"github.com/corobench/corobench/scenarios"
)

// FileIO: c coroutines read random 4 KiB blocks of a file the scenario
// creates.
var FileIO = register(&scenarios.Scenario{
	Name:  "fileio",
	Bench: "FileIO",
	Summary: "Coroutines reading random 4 KiB blocks of a cached file: through the reactor's thread pool, or a blocking pread per goroutine; cost per read. " +
		poolCPUs,
	UsesPool: true,
	Doc: fmt.Sprintf("The scenario writes a %d MiB file, then c coroutines each open it and read random 4 KiB blocks at 4 KiB-aligned offsets, N reads in all: "+
		"the stackful and stackless rows through the reactor's thread pool (stackful.File.ReadAt, stackless File.ReadAt: pread on a pool thread), "+
		"the goroutine rows with os.File.ReadAt (a pread that blocks the goroutine's thread). "+
		"The file is in the page cache (it was just written): this measures the path to the data, not the disk. "+
		"ns/read is the wall time per read (c opens included), reads/s its inverse. %s "+
		"io_uring: not used; the file IO path is the thread pool on every kernel (the results' io-uring line records whether this kernel offers it).", fileIOSize>>20, poolCPUsDoc),
	Claim: "File IO through a thread pool, as libuv does it (docs/design.md §4): its cost against goroutines that simply block a thread.",
	Params: []scenarios.Param{
		{Key: "c", Full: []string{"1", "16"}, Quick: []string{"4"}, Doc: "reading coroutines", Min: 1, Max: 4096, BytesPer: scenarios.CoroutineBytes + fileIOBlock},
	},
	NotJudged: "a blocking read hands the P to another thread on the goroutine rows",
	Metrics: []scenarios.Metric{
		{Unit: "ns/read", Kind: scenarios.TimePerOp, Headline: "4 KiB file read"},
		{Unit: "reads/s", Kind: scenarios.BodyMeasured, HigherIsBetter: true},
	},
	Blocking:     fileIOBlocking,
	StateMachine: fileIOStateMachine,
	Want:         fileIOWant,
})

const (
	fileIOSize  = 16 << 20
	fileIOBlock = 4 << 10
)

// fileIOWord is the little-endian word the file holds at byte offset o (a
// multiple of 8): the checksum can be computed from offsets alone.
func fileIOWord(o int64) uint64 { return mix(0, uint64(o)) }

// fileIOOffset is the offset of read i: a block picked by a multiplicative
// hash, the same on every row.
func fileIOOffset(i int) int64 {
	return int64((uint64(i)*0x9E3779B97F4A7C15>>40)%(fileIOSize/fileIOBlock)) * fileIOBlock
}

// fileIOMix folds read i of block p (its first and last words) into the sum
// by addition: the readers finish in varying order.
func fileIOMix(i int, first, last uint64) uint64 { return mix(0, uint64(i)^first^last<<1) }

func fileIOWant(env *scenarios.Env) uint64 {
	var sum uint64
	for i := 0; i < env.N; i++ {
		o := fileIOOffset(i)
		sum += fileIOMix(i, fileIOWord(o), fileIOWord(o+fileIOBlock-8))
	}
	return sum
}

// fileIOCheck folds a block read for read i, or says what is wrong with it.
func fileIOCheck(i, n int, err error, p []byte) (uint64, error) {
	if err != nil {
		return 0, fmt.Errorf("fileio: read %d: %w", i, err)
	}
	if n != fileIOBlock {
		return 0, fmt.Errorf("fileio: read %d: %d bytes, want %d", i, n, fileIOBlock)
	}
	return fileIOMix(i, binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[fileIOBlock-8:])), nil
}

// fileIOCreate writes the file (before the timer; plain os calls: on the
// stackful rows this blocks the scheduler's thread, which is idle then).
func fileIOCreate() (string, error) {
	f, err := os.CreateTemp("", "corobench-fileio-*")
	if err != nil {
		return "", err
	}
	buf := make([]byte, 1<<20)
	for base := int64(0); base < fileIOSize && err == nil; base += int64(len(buf)) {
		for o := 0; o < len(buf); o += 8 {
			binary.LittleEndian.PutUint64(buf[o:], fileIOWord(base+int64(o)))
		}
		_, err = f.Write(buf)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func fileIOOutcome(env *scenarios.Env, sum uint64) (scenarios.Outcome, error) {
	return scenarios.Outcome{Ops: int64(env.N), Checksum: sum, Values: map[string]float64{
		"reads/s": float64(env.N) / env.Elapsed().Seconds(),
	}}, nil
}

// fileIOBlocking is the blocking body: reader w opens the file and does
// reads w, w+c, ...; its sum is its own until its done signal.
func fileIOBlocking(rt scenarios.Blocking, env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarvedBlocking(rt); err != nil {
		return scenarios.Outcome{}, err
	}
	files, ok := rt.(scenarios.Files)
	if !ok {
		return scenarios.Outcome{}, scenarios.Lacking(rt, "Files", "the row has no file reads that suspend only the calling coroutine")
	}
	path, err := fileIOCreate()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer os.Remove(path)
	n, c := env.N, env.Int("c")
	sums := make([]uint64, c)
	errs := make([]error, c)
	done := make([]scenarios.Signal, c)
	for w := range done {
		done[w] = rt.NewSignal()
	}
	env.ResetTimer()
	for w := 0; w < c; w++ {
		rt.Go(func() {
			defer done[w].Fire()
			f, err := files.OpenFileReader(path)
			if err != nil {
				errs[w] = err
				return
			}
			defer f.Close()
			p := make([]byte, fileIOBlock)
			for i := w; i < n; i += c {
				k, err := f.ReadAt(p, fileIOOffset(i))
				v, err := fileIOCheck(i, k, err, p)
				if err != nil {
					errs[w] = err
					return
				}
				sums[w] += v
			}
		})
	}
	waitAll(done)
	env.StopTimer()
	sum, err := sumWorkers(errs, sums)
	if err != nil {
		return scenarios.Outcome{}, err
	}
	return fileIOOutcome(env, sum)
}

// fileIOStateMachine is the state-machine twin: c reader tasks on
// stackless Files.
func fileIOStateMachine(env *scenarios.Env) (scenarios.Outcome, error) {
	if err := poolStarved(); err != nil {
		return scenarios.Outcome{}, err
	}
	path, err := fileIOCreate()
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer os.Remove(path)
	s, release, err := StacklessFor("fileio")
	if err != nil {
		return scenarios.Outcome{}, err
	}
	defer release()
	c := env.Int("c")
	left := c
	readers := make([]*fileIOReader, c)
	for w := range readers {
		f, err := s.NewFile()
		if err != nil {
			return scenarios.Outcome{}, err
		}
		defer f.Release()
		readers[w] = &fileIOReader{f: f, path: path, i: w, n: env.N, c: c, p: make([]byte, fileIOBlock), left: &left, env: env}
	}
	env.ResetTimer()
	for _, t := range readers {
		if err := s.Spawn(t); err != nil {
			return scenarios.Outcome{}, err
		}
	}
	if err := s.Run(); err != nil {
		return scenarios.Outcome{}, err
	}
	var sum uint64
	for _, t := range readers {
		sum += t.sum
	}
	return fileIOOutcome(env, sum)
}

// States of a fileio reader.
const (
	fiOpen   uint8 = iota // open the file
	fiOpened              // the open finished: first read
	fiRead                // a read finished: fold it, next read
	fiClosed              // the close finished
)

// fileIOReader is one reading task: open, reads i, i+c, ..., close.
type fileIOReader struct {
	stackless.Coro
	state   uint8
	f       *stackless.File
	path    string
	i, n, c int
	p       []byte
	sum     uint64
	left    *int // readers not finished; the last one stops the timer
	env     *scenarios.Env
}

func (t *fileIOReader) Resume(c *stackless.Context) stackless.Step {
	switch t.state {
	case fiOpen:
		t.state = fiOpened
		return t.f.Open(c, t.path, os.O_RDONLY, 0)
	case fiOpened:
		if err := c.Err(); err != nil {
			return c.Fail(err)
		}
	case fiRead:
		n, _ := c.Result().(int)
		v, err := fileIOCheck(t.i, n, c.Err(), t.p)
		if err != nil {
			return c.Fail(err)
		}
		t.sum += v
		t.i += t.c
	case fiClosed:
		if *t.left--; *t.left == 0 {
			t.env.StopTimer()
		}
		return c.Done()
	}
	if t.i < t.n {
		t.state = fiRead
		return t.f.ReadAt(c, t.p, fileIOOffset(t.i))
	}
	t.state = fiClosed
	return t.f.Close(c)
}
