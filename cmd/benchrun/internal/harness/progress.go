package harness

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// NewProgress returns a progress bar with an ETA when w is a terminal, and a
// plain line per cell otherwise (CI logs, pipes). Either way it writes to w,
// which should be stderr: stdout stays clean for the results path.
func NewProgress(w io.Writer, terminal bool) Progress {
	if terminal {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(total int) {
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("cells"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Cell(_ int, c Cell, status string) {
	p.bar.Describe(fmt.Sprintf("%-40s %s", c.Name(), status))
	_ = p.bar.Add(1)
}

func (p *barProgress) Finish() { _ = p.bar.Finish() }

type lineProgress struct {
	w     io.Writer
	total int
	start time.Time
}

func (p *lineProgress) Start(total int) { p.total, p.start = total, time.Now() }

func (p *lineProgress) Cell(i int, c Cell, status string) {
	fmt.Fprintf(p.w, "[%d/%d %s] %s rep %d: %s\n", i+1, p.total, time.Since(p.start).Round(time.Second), c.Name(), c.Rep+1, status)
}

func (p *lineProgress) Finish() {}

// Extend adds cells (extra repetitions) to the bar's total.
func (p *barProgress) Extend(more int) { p.bar.ChangeMax(p.bar.GetMax() + more) }

// Extend adds cells (extra repetitions) to the count shown.
func (p *lineProgress) Extend(more int) { p.total += more }
