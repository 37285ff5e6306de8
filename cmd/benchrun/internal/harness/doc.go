// Package harness runs benchrun's cells: it plans the interleaved order,
// starts one child process per cell, enforces the per-cell timeout, appends
// each finished cell to the results file as it lands, and keeps a run log.
//
// Invariants:
//   - a cell (scenario × row × parameter values × repetition) runs in a
//     fresh child process, so RSS, GC state, GOMAXPROCS and GODEBUG are the
//     cell's own;
//   - rows are interleaved round-robin within each repetition, so drift in
//     the machine (frequency, noise) spreads over every row instead of
//     biasing one;
//   - every finished cell is on disk (written and synced) before the next
//     starts, so a crash, a timeout or Ctrl-C never loses finished work;
//   - a failed cell never stops the run; it is noted in the results file and
//     the run log, and makes the run's status non-zero at the end.
//
// # Life of a cell
//
// One cell, from the command line to a line of the results file. Each step
// names the function that takes it (doc_test.go checks that they exist).
//
//  1. cli.Main finds no subcommand in the table and calls runMain, which
//     parses the flags (parseFlags) and calls runBench.
//  2. runBench lists the run's cells with Plan (repetition by repetition,
//     rows round-robin) and hands them to Run with the machine's config
//     lines (MachineConfig).
//  3. Run creates the results file and the run log, and for each cell in
//     turn calls runCell.
//  4. runCell starts a child process under the per-cell timeout: this same
//     binary (selfCommand) with the hidden cell subcommand and the cell's
//     flags (childArgs), in the row's environment (childEnv: GODEBUG, and
//     GOMAXPROCS per row and scenario: a thread-pool cell gets one P per
//     pool thread beside the scheduler's, Row.CellGOMAXPROCS).
//  5. In the child, cli.Main dispatches to ChildMain, which looks the
//     scenario and the row up in the registry and calls
//     driver.MeasureWith.
//  6. MeasureWith grows the iteration count until a run lasts its share of
//     the bench time (the warm-up), then makes DefaultRuns timed runs with
//     that count; each is runOnce: the GC policy (gcPolicy.before: a
//     forced GC, a warm heap, the collector held off), then the body — the
//     state machine for the stackless row, else the blocking body inside
//     the row's runtime (Row.RunBlocking, the row's RowDef.RunBlocking) —
//     and the checksum checked against Scenario.Want. Around the body
//     readSched takes the process's runqueue wait; on one P a run that
//     waited over driver.DisturbedShare of its wall time is disturbed and
//     re-taken while that can still give a clean majority.
//  7. summarize turns the timed runs into the scenario's metrics, each the
//     median over the clean runs (over all, and the sample disturbed, when
//     they are not a majority); ChildMain writes them (or "not supported:
//     reason") to stdout as one JSON line with each run's figure and
//     signal.
//  8. Back in the parent, runCell decodes that line; Run appends the
//     figure to the results file (resultFor, with the machine's config),
//     or for a disturbed process a disturbed line with the figure and no
//     result line (the cell gets another repetition in its place), or a
//     failed/unsupported note, syncs the file, and logs the cell and
//     each of its timed runs.
//  9. When every cell has run, runBench builds the report from the results
//     file (writeReport, report.Build).
package harness
