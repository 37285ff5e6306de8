package stackless

import "time"

// reactorState is the scheduler's link to reactor/. Until reactor/ is
// integrated, timers are not supported.
type reactorState struct{}

type timerSlot struct{}

func (r *reactorState) active() bool { return false }

func (s *Scheduler) tickThrottled() {}

func (s *Scheduler) tick(noWait bool) { _ = noWait }

func (s *Scheduler) armTimer(co *Coro, d time.Duration) {
	_ = d
	panic("stackless: not supported: timers need reactor/, not integrated yet")
}

func (s *Scheduler) disarmTimer(t *timerSlot) {}
