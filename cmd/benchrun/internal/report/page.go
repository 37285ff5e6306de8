package report

import (
	"html/template"
	"strings"
	"sync"

	"github.com/corobench/corobench/cmd/benchrun/internal/claims"
)

var funcs = template.FuncMap{
	"verdictClass": func(v claims.Verdict) string { return "v-" + strings.ReplaceAll(string(v), " ", "-") },
	"colLabel": func(c string) string {
		if c == "" {
			return "value"
		}
		return c
	},
}

// pageTemplate is the report. Every element is closed (XHTML style) so the
// page is also well-formed XML; the CSS avoids '<' and '&' for the same
// reason. Nothing is loaded from outside the report's directory.
//
// Parsed on first use, not at package init: every process benchrun starts
// (cell children, the load generator, the exec scenario's children, whose
// start-up is inside Exec's timed region) links this package, and parsing
// the page took ~1 ms of each one's start.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(funcs).Parse(pageText))
})

const pageText = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; font-size: 15px; line-height: 1.45; color: #1a1a1a; background: #fff; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 26px; margin: 12px 0 4px; }
h2 { font-size: 21px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #d0d7de; }
h3 { font-size: 17px; margin: 22px 0 6px; }
p.lede { color: #444; margin-top: 4px; }
nav { font-size: 14px; margin: 8px 0 0; }
nav a { margin-right: 10px; white-space: nowrap; }
a { color: #0b5cad; }
code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 13.5px; background: #f3f4f6; padding: 0 3px; border-radius: 3px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 5px 8px; vertical-align: top; text-align: left; }
thead th { background: #f3f4f6; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
table.kv th { background: #f6f8fa; font-weight: normal; color: #333; white-space: nowrap; }
table.fig td { text-align: right; min-width: 110px; }
table.fig th.row { text-align: left; white-space: nowrap; }
/* The headline's figure names carry a long detail line (scenario, unit,
   direction): wrapped, so that the five rows' columns fit a 1200 px window
   without scrolling. */
table.head th.row { white-space: normal; min-width: 220px; max-width: 300px; }
table.lines td { max-width: 330px; }
table.lines .detail { text-align: left; }
.med { font-weight: bold; font-size: 15px; }
.ci { color: #555; }
.ratio, .detail { font-size: 12.5px; color: #555; }
.flag { font-size: 12px; color: #7a4b00; background: #fff4d6; border-radius: 3px; padding: 0 3px; margin-top: 2px; display: inline-block; }
td.c-failed, table.fig td.c-failed { background: #fde8e8; text-align: left; }
td.c-unsupported, table.fig td.c-unsupported { background: #f1f1f1; text-align: left; }
table.fig td.c-absent { color: #888; text-align: center; }
.status { font-weight: bold; }
.reason { font-size: 12.5px; color: #333; max-width: 260px; }
.v-holds { background: #dcf5e0; font-weight: bold; }
.v-does-not-hold { background: #fde2e2; font-weight: bold; }
.v-cheaper-than-claimed { background: #dbeafe; color: #0b3d91; font-weight: bold; }
.v-not-measured { background: #eeeeee; font-weight: bold; color: #444; }
.quote { font-style: italic; }
figure { margin: 10px 0 22px; }
figure img { width: 100%; max-width: 1000px; height: auto; border: 1px solid #e5e7eb; }
figcaption { font-size: 13px; color: #444; }
.note { font-size: 13.5px; color: #444; }
.alert { background: #fff1c2; border: 2px solid #d4a017; border-radius: 4px; padding: 6px 10px; font-weight: bold; }
table.head td.best { background: #e6f4ea; }
.star { color: #1a7f37; }
table.notes { table-layout: fixed; width: 100%; }
table.fig td.noisy { background: #fff8e6; border-left: 3px solid #d4a017; }
.floor { color: #35507a; }
table.notes td { overflow-wrap: anywhere; word-break: break-word; }
table.notes code { white-space: normal; overflow-wrap: anywhere; }
@media print {
  body { font-size: 11px; }
  main { max-width: none; padding: 0; }
  nav { display: none; }
  table { font-size: 10.5px; width: 100%; }
  table.kv td, table.kv th { overflow-wrap: anywhere; white-space: normal; }
  tr, figure { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  figure img { max-width: 100%; }
  div.wide { overflow: visible; }
}
div.wide { overflow-x: auto; }
footer { margin-top: 40px; font-size: 12.5px; color: #666; }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{range .Alerts}}<p class="alert">{{.}}</p>
{{end}}<p class="lede">Coroutine runtimes measured on one machine: our stackful runtime with its own assembly switch (stackful-asm), the same runtime on Go's iter.Pull coroutines (stackful-coro), a stackless state-machine runtime (stackless), and goroutines with GOMAXPROCS=1 and all cores. Every figure is the median of the repetitions in the results file, with its 95% confidence interval.</p>
<nav>
<a href="#glance">At a glance</a>
<a href="#claims">Claims</a>
<a href="#run">Run</a>
<a href="#policy">Measurement policy</a>
<a href="#noise">Noise</a>
<a href="#problems">Cells without a figure ({{len .Notes}})</a>
<a href="#anchors">Published anchors</a>
<a href="#colouring">Function colouring</a>
{{range .Scenarios}}<a href="#{{.ID}}">{{.Name}}</a>
{{end}}</nav>
</header>

<section id="glance">
<h2>At a glance</h2>
{{if .Headline.Lines}}<table class="fig head">
<thead><tr><th>figure (median ± 95% CI)</th>{{range .Headline.Rows}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Headline.Lines}}<tr><th class="row"><a href="{{.Href}}">{{.Label}}</a><div class="detail">{{.Scenario}}{{if .Setting}} {{.Setting}}{{end}} · {{if .Knee}}knee: the highest offered rate sustained, <code>{{.Unit}}</code>{{else}}<code>{{.Unit}}</code>{{end}} · {{if .Higher}}higher{{else}}lower{{end}} is better</div></th>{{range .Cells}}<td class="c-{{.Kind}}{{if .Best}} best{{end}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if eq .Kind "fig"}}{{if .Best}}<span class="star">★</span> {{end}}<span class="med">{{.Median}}</span> <span class="ci">{{.CI}}</span>{{range .Flags}}<div class="flag">{{.}}</div>{{end}}{{else if eq .Kind "absent"}}—{{else}}<span class="status">{{.Kind}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<p class="note">★ marks the best median of each line, and every figure the Mann-Whitney U test cannot tell from it at alpha {{.Stats.Alpha}}; on a knee line, the highest knee (knees are steps of the sweep, so equal knees tie), or where the load generator caps the knees, the rows the scenario's ranking puts first by their estimated capacity ("one core ≥ …", a lower bound; the scenario's section says how). "above saturation" marks a latency taken at an offered rate above the row's knee: a queue of work waiting, not the service time. Each label links to its scenario's section, with every parameter setting, chart and caveat.</p>
{{else}}<p>This run has none of the headline figures.</p>
{{end}}</section>

<section id="claims">
<h2>Claims of the reference design</h2>
<p class="note">The reference design's claims (docs/design.md §1) checked against this run. A range claim holds when the 95% confidence interval of the median overlaps the range; a relative claim holds when the difference is significant (Mann-Whitney, alpha {{.Stats.Alpha}}) and at least as large as its rule says.</p>
<table>
<thead><tr><th>claim</th><th>checked against</th><th>rule</th><th>measured in this run</th><th>verdict</th><th>why</th></tr></thead>
<tbody>
{{range .Claims}}<tr><td>{{.Text}}</td><td>{{.Measures}}</td><td>{{.Rule}}</td><td>{{if .Figure}}{{.Figure}}{{else}}—{{end}}</td><td class="{{verdictClass .Verdict}}">{{.Verdict}}</td><td>{{.Why}}</td></tr>
{{end}}</tbody>
</table>
</section>

<section id="run">
<h2>Run</h2>
{{range .Files}}<table class="kv">
<caption>Results file <a href="{{.Raw.Href}}">{{.Raw.Href}}</a> (read from <code>{{.Raw.Original}}</code>)</caption>
<tbody>
{{if .Header}}<tr><th>header</th><td>{{range .Header}}<div><code>{{.}}</code></div>{{end}}</td></tr>
{{end}}{{range .Meta}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>
{{else}}<tr><td>no configuration lines</td></tr>
{{end}}</tbody>
</table>
{{end}}</section>

<section id="policy">
<h2>Measurement policy</h2>
<table class="kv">
<tbody>
<tr><th>gc-policy</th><td>{{range .Policy.GCPolicies}}<div><code>{{.Key}}</code>: {{.Value}}</div>{{else}}not recorded in the results file{{end}}</td></tr>
<tr><th>gomaxprocs per row</th><td>{{range .Policy.GOMAXPROCS}}<div>{{.Key}}: <code>{{.Value}}</code></div>{{else}}not recorded in the results file{{end}}</td></tr>
<tr><th>timer floor (latency cells)</th><td>{{range .Policy.TimerFloors}}<div>{{.Key}}: <code>{{.Value}}</code></div>{{else}}not recorded (no latency cell in this run){{end}}</td></tr>
<tr><th>statistics</th><td>Median of the repetitions with a distribution-free {{printf "%.0f" .Stats.Confidence}}% confidence interval built from order statistics (golang.org/x/perf/benchmath, AssumeNothing); "±x%" is the wider side of the interval. Ratios compare medians; "(~)" marks a ratio whose Mann-Whitney U test is not significant at alpha {{.Stats.Alpha}}. Cells with fewer than {{.Stats.MinSamples}} samples have no 95% interval (±∞) and are flagged; so is a coefficient of variation (sample standard deviation / mean) above {{printf "%.0f" .Stats.MaxCV}}%. Hover a figure for its interval, range and source line.</td></tr>
</tbody>
</table>
</section>

<section id="noise">
<h2>Noise</h2>
<p class="note">How quotable this run's figures are. The coefficient of variation (CV: sample standard deviation / mean of a cell's repetitions) of each cell, in bands; the bands are cumulative. Per-operation cells are the times per operation without a percentile (ns/switch, ns/spawn, ns/await, ns/task, ns/wake, ns/roundtrip, …): the target of {{printf "%.0f" .Stats.MaxCV}}% is theirs. In the tables a cell over {{printf "%.0f" .Stats.MaxCV}}% has a yellow edge and its flag.</p>
<table>
<thead><tr><th>cells</th><th>with a CV</th><th>CV ≤ 5%</th><th>CV ≤ 10%</th><th>CV ≤ 20%</th><th>CV &gt; 20%</th><th>no CV (one figure)</th></tr></thead>
<tbody>
{{with .Noise.PerOp}}<tr><th>per-operation</th><td>{{.Cells}}</td><td>{{.Le5}} ({{.Pct5}})</td><td>{{.Le10}} ({{.Pct10}})</td><td>{{.Le20}} ({{.P20}})</td><td>{{.Over20}}</td><td>{{.NoCV}}</td></tr>
{{end}}{{with .Noise.All}}<tr><th>all</th><td>{{.Cells}}</td><td>{{.Le5}} ({{.Pct5}})</td><td>{{.Le10}} ({{.Pct10}})</td><td>{{.Le20}} ({{.P20}})</td><td>{{.Over20}}</td><td>{{.NoCV}}</td></tr>
{{end}}</tbody>
</table>
<table class="kv">
<tbody>
<tr><th>repetitions</th><td>{{range .Noise.Stops}}<div>{{.Key}}: {{.Value}} cell(s)</div>{{else}}no <code>reps</code> lines in the results file (a run without extra repetitions){{end}}<div class="note">Each cell gets the --count repetitions, then more, one per round, while its CV is over the target, up to a cap and within a time budget; the <code>reps</code> line says how many it got and why it stopped. The tables show it under each figure.</div></td></tr>
<tr><th>steal</th><td>{{if .Noise.Steal}}{{len .Noise.Steal}}{{if .Noise.StealMore}}+{{.Noise.StealMore}}{{end}} repetition(s) ran while the hypervisor stole more than 1% of the CPU time (<code>/proc/stat</code>); their cells are flagged in the tables.{{else}}No repetition was marked for steal time.{{end}}</td></tr>
<tr><th>shared core</th><td>{{if .Noise.CoreRuns}}{{.Noise.CoreShared}} of {{.Noise.CoreRuns}} timed runs ({{.Noise.CoreSharedPct}}) read the core probe over the run's limit: another tenant ran on the sibling hyperthread of the cells' CPU, which slows pure-CPU code up to ~1.9×. {{.Noise.CoreMostly}} of {{.Noise.CoreCells}} cells had more than half of their timed runs so; each cell's <code>reps</code> line counts its own.{{if .Noise.CoreProbe}} <code>core-probe: {{.Noise.CoreProbe}}</code>{{end}}{{else}}{{if .Noise.CoreProbe}}<code>core-probe: {{.Noise.CoreProbe}}</code>{{else}}Not recorded: the run had the core probe off, or predates it.{{end}}{{end}}<div class="note">The core probe times a throughput-bound and a latency-bound register loop just before and just after each timed run; their ratio holds steady near 1 on an unshared core (its level depends on the CPU: the <code>core-probe:</code> line gives this run's) and rises when the sibling hyperthread is busy. With <code>--core-mark</code> (the default) a judged cell's shared runs are re-taken and left out; with <code>--core-mark=false</code> they count, and a figure whose cell was mostly shared is a shared core's figure. The <code>core-probe:</code> line says which: with the mark it names the limit the children judged by.</div></td></tr>
<tr><th>disturbed</th><td>{{if .Noise.Disturbed}}{{.Noise.Disturbed}} repetition(s) not counted{{if .Noise.DisturbedKept}} ({{.Noise.DisturbedKept}} of them written as figures after all, in cells left with fewer than two undisturbed ones){{end}}: most of their process's timed runs were disturbed: they waited on a runqueue for more than {{.Noise.DisturbedMark}} of their wall time, another task holding the CPU{{if .Noise.DisturbedCore}}, or read the core probe over the run's limit (a shared core, <code>--core-mark</code>: so in {{.Noise.DisturbedCore}} of them){{end}}. Each has a <code>disturbed</code> line with its figure in the results file; the cells are flagged in the tables.{{else}}No repetition was marked disturbed{{if .Noise.CrossSlow}} by a runqueue wait{{end}}.{{end}}{{if .Noise.CrossSlow}} {{.Noise.CrossSlow}} repetition(s) of multi-P cells not counted in the cross-CPU slow mode: the round trip of a cache line between the two CPUs, measured just before and just after their process, read more than a stated multiple of the run's fast level (the median of its readings at most twice its 5th percentile) on at least one side: the host's placement of the CPUs, not the row. Each has a <code>disturbed</code> line with its figure, both readings and the multiple, and is replaced by another repetition while the extra repetitions' budget lasts.{{end}}{{if .Noise.DroppedRuns}} The counted repetitions left {{.Noise.DroppedRuns}} disturbed timed run(s) out of their medians.{{end}}<div class="note">A cell on one P is one runnable thread by design, so a runqueue wait is another task's doing; the cells of multi-P rows are not judged by it (their own threads wait for each other), only by the cross-CPU slow mode. A disturbed repetition is replaced by another while the extra repetitions' budget lasts.</div></td></tr>
<tr><th>preempted</th><td>{{if .Noise.Preempted}}Cells whose timed region is many short segments (a fresh runtime's lifecycle, a Shutdown cycle), with the segments in which the body's thread was preempted (an involuntary context switch inside the segment, <code>getrusage(RUSAGE_THREAD)</code>), and their share of the timed time: {{range $i, $p := .Noise.Preempted}}{{if $i}}; {{end}}{{$p.Where}}: {{$p.Text}}, {{printf "%.1f" $p.Share}}%{{end}}. They count in the figures (a preempted segment's own CPU time was also long: see the README's measurement section); a cell with a tenth or more of its timed time in them is flagged.{{else}}No cell of short timed segments had one preempted.{{end}}</td></tr>
<tr><th>OS timer floor</th><td>{{if .Noise.Floor}}<code>{{.Noise.Floor}}</code><div class="note">The lateness of the Timer scenario's n=1 sleeps (50 µs–5 ms, clock_nanosleep to each deadline) on a plain thread with 1 ns timer slack, as cyclictest measures it: what this machine's kernel and hypervisor add to any wake-up. Every latency cell below shows its median against it (p50 against p50, p99 and max against p99). Its <code>cpu=</code> is the sleeping thread's CPU time per sleep, what the machine charges for going to sleep and being woken: each CPU time per wake below is shown against it (at a light load a row's loop sleeps between wakes as that thread does).</div>{{else}}not recorded in the results file{{end}}</td></tr>
<tr id="wake-floor"><th>OS thread hand-off floor</th><td>{{if .Noise.WakeFloor}}<code>{{.Noise.WakeFloor}}</code>{{else}}not measured by this run (its results file has no <code>thread-wake-floor-os</code> line: a run from before benchrun measured it){{end}}<div class="note">The round trip of two bare OS threads on two CPUs waking each other through a futex (FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE, no spinning), as a thread pool's submitter and worker hand off: what this machine's kernel and hypervisor charge for waking a sleeping thread on another CPU and being woken back. The pool rows of offload, fileio and dns (stackful and stackless, which run the work on the reactor's thread pool) pay it on every operation by design; the goroutine rows do not. Their sections show those rows' per-operation figures against its p50.</div></td></tr>
</tbody>
</table>
{{if .Noise.Steal}}<table class="notes">
<colgroup><col style="width: 28%"/><col style="width: 54%"/><col style="width: 18%"/></colgroup>
<thead><tr><th>cell</th><th>steal mark</th><th>recorded at</th></tr></thead>
<tbody>
{{range .Noise.Steal}}<tr><td>{{.Where}}</td><td>{{.Text}}</td><td><code>{{.At}}</code></td></tr>
{{end}}{{if .Noise.StealMore}}<tr><td colspan="3">and {{.Noise.StealMore}} more in the results file</td></tr>
{{end}}</tbody>
</table>
{{end}}</section>

<section id="problems">
<h2>Cells without a figure</h2>
{{if .Notes}}<table class="notes">
<colgroup><col style="width: 11%"/><col style="width: 13%"/><col style="width: 11%"/><col style="width: 10%"/><col style="width: 40%"/><col style="width: 15%"/></colgroup>
<thead><tr><th>scenario</th><th>row</th><th>parameters</th><th>status</th><th>reason</th><th>recorded at</th></tr></thead>
<tbody>
{{range .Notes}}<tr><td>{{.Scenario}}</td><td>{{.Row}}</td><td>{{.Column}}</td><td class="c-{{.Kind}}"><span class="status">{{.Kind}}</span></td><td>{{.Reason}}</td><td><code>{{.File}}:{{.Line}}</code></td></tr>
{{end}}</tbody>
</table>
{{else}}<p>Every cell produced a figure.</p>
{{end}}</section>

<section id="anchors">
<h2>Published anchors (quotations, not measured by this run)</h2>
<p class="note">Figures other projects published for their own systems on their own hardware, quoted for context from the sources named. They were not measured here and are not directly comparable with the tables below. Switch figures are one-way unless the source says otherwise; the "counting" column says which.</p>
{{range .Anchors}}<table>
<caption>{{.Topic}}</caption>
<thead><tr><th>system</th><th>published figure (quoted)</th><th>counting</th><th>hardware</th><th>source</th></tr></thead>
<tbody>
{{range .Anchors}}<tr><td>{{.System}}</td><td class="quote">{{.Figure}}</td><td>{{if .Counting}}{{.Counting}}{{else}}—{{end}}</td><td>{{.Hardware}}</td><td>{{.Source}}</td></tr>
{{end}}</tbody>
</table>
{{end}}</section>

<section id="colouring">
<h2>Function colouring: lines per body</h2>
<p class="note">Each scenario is written twice: a blocking body of straight-line Go, which the stackful and goroutine rows run unchanged, and a state machine lowered by hand for the stackless row. The table gives the lines of code (non-blank, non-comment) of each, counted from the Go source this benchrun was built from, not from the results file, by package <code>scenarios/bodylines</code>, whose doc states the rule: a body is its function and every package-level declaration it reaches (a state machine's task types with their <code>Resume</code> methods), less what the scenario's two bodies share (checksums, parameter checks, outcome building); only the package <code>scenarios/bodies</code> is counted, so the contract, the rows' adapters and the measurement driver, all in packages of their own, are not. Code one scenario borrows from another is counted in both: handoff runs pingpong's bodies. The counted declarations are listed under each figure. {{.Colouring.Summary}}</p>
<table class="fig lines">
<thead><tr><th>scenario</th><th>blocking body (lines)</th><th>state-machine body (lines)</th><th>state machine / blocking</th></tr></thead>
<tbody>
{{range .Colouring.Rows}}<tr><th class="row">{{if .Href}}<a href="{{.Href}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</th><td><span class="med">{{.Blocking.Lines}}</span><div class="detail">{{.Blocking.Decls}}</div></td><td><span class="med">{{.StateMachine.Lines}}</span><div class="detail">{{.StateMachine.Decls}}</div></td><td><span class="med">{{.Ratio}}</span></td></tr>
{{end}}</tbody>
</table>
</section>

{{range .Scenarios}}<section id="{{.ID}}">
<h2>{{.Name}}</h2>
{{if .About}}<p class="note">{{.About}}</p>
{{end}}{{if .Pool}}<p class="note">{{.Pool}}</p>
{{end}}{{with .Knee}}<h3>Knee: the highest offered rate each row sustains{{if .Main}} ({{.Main}}){{end}}, ranked</h3>
<p class="note">A row sustains an offered rate when its <code>{{.Latency}}</code> (median over the runs) stays within {{.Bound}} at that rate and at every lower one{{if .Achieved}}, and it completes at least {{.Share}} of the offered rate (<code>{{.Achieved}}</code>, median over the runs){{end}}{{if .CPU}}, and the rate times its <code>{{.CPU}}</code> fits in the row's CPUs (its GOMAXPROCS): a row that wakes late sleeps again from then, so its lateness need not grow with an overload, but the CPU it needs does{{end}}; the bound is {{.Why}}. The knee lies between it and the next rate of the sweep. A latency figure taken above a row's knee is a queue of work waiting (how long it grows depends on the scenario: Timer bounds it by its window, an open-loop Echo by the run's length), not the service time, and is labelled "above saturation" in the tables below and in the headline table.</p>
{{if .Ceiling}}<p class="note"><b>Load generator ceiling{{if .Main}} at {{.Main}}{{end}}:</b> {{.Ceiling}}. {{.CeilingNote}}</p>
{{end}}<table class="kv">
<thead><tr><th>rank</th><th>row</th><th>knee (offered {{.What}}/s)</th><th>where</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Rank}}</td><th>{{.Row}}</th><td>{{.Knee}}{{if .GeneratorBound}}<div class="flag">possibly generator-bound</div>{{end}}{{if .Estimate}}<div class="detail">ranked by {{.Estimate}}</div>{{end}}</td><td>{{.Detail}}{{if .Other}}<div class="detail">other settings: {{.Other}}</div>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{if .RankNote}}<p class="note">{{.RankNote}}</p>
{{end}}{{end}}{{range .Tables}}{{if .Unit}}<h3><code>{{.Unit}}</code>: {{.Label}}, median ± 95% CI {{if .Higher}}(higher is better){{else}}(lower is better){{end}}</h3>{{else}}<h3>No figures: every cell failed or is not supported</h3>{{end}}
<div class="wide"><table class="fig">
<thead><tr><th>row</th>{{range .Columns}}<th>{{colLabel .}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><th class="row">{{.Row}}</th>{{range .Cells}}<td class="c-{{.Kind}}{{if .Noisy}} noisy{{end}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if eq .Kind "fig"}}<span class="med">{{.Median}}</span> <span class="ci">{{.CI}}</span>{{range .Ratios}}<div class="ratio">{{.}}</div>{{end}}{{if .Floor}}<div class="ratio floor">{{.Floor}}</div>{{end}}{{if .Wake}}<div class="ratio floor">{{.Wake}}</div>{{end}}<div class="detail">{{.Detail}}</div>{{if .Reps}}<div class="detail">{{.Reps}}</div>{{end}}{{range .Flags}}<div class="flag">{{.}}</div>{{end}}{{else if .Missing}}—{{else}}<span class="status">{{.Kind}}</span><div class="reason">{{.Reason}}</div>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}{{range .Charts}}<figure>
<a href="{{.SVG}}"><img src="{{.PNG}}" alt="{{.Alt}}"/></a>
<figcaption>{{.Caption}} <a href="{{.SVG}}">SVG</a> · <a href="{{.PNG}}">PNG</a></figcaption>
</figure>
{{end}}</section>
{{end}}
<footer>Written by benchrun's report package from the results file(s) linked above; rebuild with <code>benchrun report FILE...</code>. The page and its images need nothing outside this directory.</footer>
</main>
</body>
</html>
`
