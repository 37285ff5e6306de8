package cli

import (
	"testing"
	"time"
)

// TestCellsBudgetKeepsTheReportsTime: with a report to write, the cells get
// the run budget less reportReserve, so that the whole command ends within
// it; without one, or with no budget, the budget is passed on unchanged.
func TestCellsBudgetKeepsTheReportsTime(t *testing.T) {
	for _, c := range []struct {
		run      time.Duration
		noReport bool
		want     time.Duration
	}{
		{defaultQuickRunBudget, false, 80 * time.Second},
		{defaultRunBudget, false, 14*time.Minute + 50*time.Second},
		{defaultQuickRunBudget, true, defaultQuickRunBudget},
		{0, false, 0},                         // no budget stays no budget
		{5 * time.Second, false, time.Second}, // under the reserve: still a budget
		{reportReserve + time.Second, false, time.Second},
	} {
		if got := cellsBudget(c.run, c.noReport); got != c.want {
			t.Errorf("cellsBudget(%v, no report %v) = %v, want %v", c.run, c.noReport, got, c.want)
		}
	}
}
