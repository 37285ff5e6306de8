package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/corobench/corobench/cmd/benchrun/internal/harness"
	"github.com/corobench/corobench/cmd/benchrun/internal/units"
	"github.com/corobench/corobench/scenarios"
	"github.com/corobench/corobench/scenarios/driver"
)

// profileEnv marks a profile process that benchrun profile re-executed
// with the row's GODEBUG: if it still lacks the setting, it refuses
// instead of re-executing again.
const profileEnv = "COROBENCH_PROFILE_REEXEC"

// runProfile is `benchrun profile`: it measures ONE cell in this process,
// as a cell's child process does (driver.MeasureWith, the same GC policy
// and checksum), with a CPU profile around one timed run made once the
// iteration count is found (driver.Options.FinalStart/FinalStop: no
// warm-up run is in the profile), and prints that run's figures and how to
// read the profile.
//
// Process settings: a row's cells run with its GOMAXPROCS and GODEBUG
// (scenarios.Row.CellGOMAXPROCS: a pool cell has more Ps; GODEBUG).
// GOMAXPROCS is set here with runtime.GOMAXPROCS, which takes effect at
// once. GODEBUG cannot be (the runtime reads most of its settings at
// start-up), so for a row that has one (stackful-asm: gcshrinkstackoff=1) the command re-executes this
// binary with the row's GODEBUG, as the harness starts its children. The
// asm row's GC fence is the stackful runtime's own and the driver's GC
// policy is the run's, so the profiled run is the child's run.
func runProfile(args []string, stdout, stderr io.Writer) int {
	fs := subFlags("profile", "", stderr)
	scenarioName := fs.String("scenario", "", "the scenario (one name; see benchrun --list)")
	implName := fs.String("impl", "", "the row (one of "+strings.Join(scenarios.RowNames(), ", ")+")")
	params := paramFlags{}
	fs.Var(params, "param", "a parameter's value: key=value (repeatable; one value each); a parameter not given takes the first value of its full sweep")
	benchtime := fs.Duration("benchtime", 100*time.Millisecond, "minimum duration of the timed run, as in a run")
	gcOn := fs.Bool("gc-on", false, "leave the collector on during the timed run (as a run's --gc-on)")
	cpuOut := fs.String("o", "cpu.pprof", "file for the CPU profile of the timed run")
	memOut := fs.String("memprofile", "", "also write the allocation profile (pprof allocs) to this file")
	if code, done := parseSub(fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "benchrun profile: "+format+"\n%s\n", append(a, usageLine("profile"))...)
		return ExitUsage
	}
	cell, err := profileCell(fs, *scenarioName, *implName, params)
	if err != nil {
		return usageErr("%v", err)
	}
	switch {
	case *benchtime <= 0:
		return usageErr("-benchtime %v: need a positive duration such as 200ms", *benchtime)
	case *cpuOut == "":
		return usageErr("-o is empty: name the CPU profile's file, for example cpu.pprof")
	}

	if g := cell.row.GODEBUG(); g != "" && !hasGODEBUG(os.Getenv("GODEBUG"), g) {
		if os.Getenv(profileEnv) != "" {
			fmt.Fprintf(stderr, "benchrun profile: row %s needs GODEBUG=%s, which this re-executed process still lacks (GODEBUG=%q); refusing to measure it in a process its cells never run in\n",
				cell.row, g, os.Getenv("GODEBUG"))
			return ExitUsage
		}
		return reexecProfile(args, g, stdout, stderr)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cell.row.CellGOMAXPROCS(cell.s)))

	f, err := os.Create(*cpuOut)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
		return ExitFailed
	}
	defer f.Close()
	started := false
	opts := driver.Options{
		Benchtime: *benchtime,
		GCOn:      *gcOn,
		Loadgen:   scenarios.ReexecLoadgen(harness.LoadgenSubcommand),
		FinalStart: func() error {
			started = true
			return pprof.StartCPUProfile(f)
		},
		FinalStop: pprof.StopCPUProfile,
	}
	var sm *driver.Sample
	cycles := 1
	if cell.s.Cycles {
		// A Cycles scenario's run is one short cycle (a shutdown of
		// n=1000 is ~150 µs): too little for a profile. Repeat cycles,
		// each a fresh measurement as a cell's child makes them, until
		// -benchtime of wall time is spent, with the profiler running
		// from the first cycle's timed run to the last one's; the
		// cycles' untimed set-up between them is in the profile too
		// (read it with -focus on the timed part).
		opts.FinalStart = func() error {
			if started {
				return nil
			}
			started = true
			return pprof.StartCPUProfile(f)
		}
		opts.FinalStop = func() {}
		sm, err = profileCycles(cell, opts, *benchtime, &cycles)
		if started {
			pprof.StopCPUProfile()
		}
	} else {
		sm, err = driver.MeasureWith(cell.s, cell.row, cell.params, opts)
	}
	name := cell.s.BenchName(cell.row, cell.params)
	if reason, ok := scenarios.IsNotSupported(err); ok {
		fmt.Fprintf(stderr, "benchrun profile: %s: not supported: %s\n", name, reason)
		return ExitFailed
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %s: %v\n", name, err)
		return ExitFailed
	}
	if !started {
		fmt.Fprintf(stderr, "benchrun profile: %s: the driver made no profiled run\n", name)
		return ExitFailed
	}
	if err := f.Close(); err != nil {
		fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
		return ExitFailed
	}
	if *memOut != "" {
		if err := writeAllocs(*memOut); err != nil {
			fmt.Fprintf(stderr, "benchrun profile: %v\n", err)
			return ExitFailed
		}
	}

	fmt.Fprintf(stdout, "%s  %d iterations", name, sm.Iters)
	if cycles > 1 {
		fmt.Fprintf(stdout, " in %d cycles (figures: their mean)", cycles)
	}
	fmt.Fprintf(stdout, " (GOMAXPROCS=%d", cell.row.CellGOMAXPROCS(cell.s))
	if g := cell.row.GODEBUG(); g != "" {
		fmt.Fprintf(stdout, ", GODEBUG=%s", g)
	}
	fmt.Fprintln(stdout, ")")
	for i, m := range cell.s.Metrics {
		u := units.Parse(m.Unit)
		fmt.Fprintf(stdout, "  %-14s %s\n", m.Unit, u.ScaleFor(sm.Values[i]).Format(sm.Values[i]))
	}
	fmt.Fprintf(stdout, "CPU profile of that timed run: %s\n", *cpuOut)
	fmt.Fprintf(stdout, "  read it with: go tool pprof -top %s   (or -list FUNC, -web; -focus FUNC for the body's loop)\n", *cpuOut)
	fmt.Fprintf(stdout, "  the figures are the profiled run's, so they include the profiler's cost (SIGPROF at 100 Hz);\n"+
		"  the profile also holds that run's untimed set-up and teardown inside the body (e.g. a warm-up round), not the warm-up runs\n")
	if *memOut != "" {
		fmt.Fprintf(stdout, "allocation profile: %s (every allocation of this process, warm-up runs included, sampled at the default rate)\n", *memOut)
		fmt.Fprintf(stdout, "  read it with: go tool pprof -sample_index=alloc_objects -top %s\n", *memOut)
	}
	return ExitOK
}

// profiledCell is the one cell benchrun profile measures.
type profiledCell struct {
	s      *scenarios.Scenario
	row    scenarios.Row
	params map[string]string
}

// profileCell resolves and validates the cell as a run does (the same
// lookups, the parameters' declared types and ranges, the memory check),
// and requires exactly one of each.
func profileCell(fs *flag.FlagSet, scenarioName, implName string, params paramFlags) (profiledCell, error) {
	if fs.NArg() > 0 {
		return profiledCell{}, fmt.Errorf("unexpected argument %q: the cell is named by flags only", fs.Arg(0))
	}
	if scenarioName == "" || implName == "" {
		return profiledCell{}, errors.New("name the cell: -scenario NAME -impl ROW [-param key=value ...]")
	}
	ss, err := selectScenarios(scenarioName)
	if err != nil {
		return profiledCell{}, err
	}
	rows, err := selectRows(implName)
	if err != nil {
		return profiledCell{}, err
	}
	if len(ss) != 1 || len(rows) != 1 {
		return profiledCell{}, fmt.Errorf("-scenario %s -impl %s names %d scenarios and %d rows: profile one cell at a time", scenarioName, implName, len(ss), len(rows))
	}
	if err := checkOverrides(ss, params); err != nil {
		return profiledCell{}, err
	}
	s := ss[0]
	cell := map[string]string{}
	for _, p := range s.Params {
		vs, ok := params[p.Key]
		switch {
		case !ok:
			cell[p.Key] = p.Full[0]
		case len(vs) != 1:
			return profiledCell{}, fmt.Errorf("-param %s=%s gives %d values: a profile is of one cell; name one value", p.Key, strings.Join(vs, ","), len(vs))
		default:
			cell[p.Key] = vs[0]
		}
	}
	if err := s.CheckCell(cell, memAvailable()); err != nil {
		return profiledCell{}, err
	}
	return profiledCell{s: s, row: rows[0], params: cell}, nil
}

// hasGODEBUG reports whether the GODEBUG value env contains every
// key=value of want.
func hasGODEBUG(env, want string) bool {
	have := strings.Split(env, ",")
	for _, kv := range strings.Split(want, ",") {
		if !slices.Contains(have, kv) {
			return false
		}
	}
	return true
}

// reexecProfile runs this binary again with the same arguments and the
// row's GODEBUG added (and GOMAXPROCS as the harness sets it), marked so
// that it does not re-execute once more.
func reexecProfile(args []string, godebug string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "benchrun profile: cannot re-execute with the row's GODEBUG=%s: %v\n", godebug, err)
		return ExitFailed
	}
	cmd := exec.Command(exe, append([]string{"profile"}, args...)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	if old := os.Getenv("GODEBUG"); old != "" {
		godebug = old + "," + godebug // later settings win
	}
	cmd.Env = append(env, "GODEBUG="+godebug, profileEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintf(stderr, "benchrun profile: re-executing with GODEBUG=%s: %v\n", godebug, err)
		return ExitFailed
	}
	return ExitOK
}

// writeAllocs writes the allocs profile after a collection: the heap
// profile is published at the end of a GC cycle, and the driver held the
// collector off during the run.
func writeAllocs(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileCycles measures a Cycles scenario's cell again and again (each a
// fresh runtime, as in a cell's child) until benchtime of wall time has
// passed, at least twice, and returns the mean of each metric over the
// cycles and their number in *cycles.
func profileCycles(cell profiledCell, opts driver.Options, benchtime time.Duration, cycles *int) (*driver.Sample, error) {
	start := time.Now()
	var out *driver.Sample
	n := 0
	for n < 2 || time.Since(start) < benchtime {
		sm, err := driver.MeasureWith(cell.s, cell.row, cell.params, opts)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &driver.Sample{Values: make([]float64, len(sm.Values))}
		}
		out.Iters += sm.Iters
		for i, v := range sm.Values {
			out.Values[i] += v
		}
		n++
	}
	for i := range out.Values {
		out.Values[i] /= float64(n)
	}
	*cycles = n
	return out, nil
}
