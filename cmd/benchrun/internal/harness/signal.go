package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Signalled is the cause of a context ended by SignalContext.
type Signalled struct{ Signal syscall.Signal }

func (s *Signalled) Error() string { return "interrupted by " + signalName(s.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// SignalContext is signal.NotifyContext for SIGINT, SIGTERM and SIGHUP that
// remembers which signal arrived (context.Cause is a *Signalled), so the run
// can name it in the results and exit with 128+n as a shell does. stop
// restores the default handling: a second Ctrl-C after stop kills at once.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-ch:
			// The first signal ends the run gracefully; the next one
			// kills (default handling) instead of being swallowed.
			signal.Stop(ch)
			cancel(&Signalled{Signal: s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// InterruptStatus is the exit status of a run interrupted by ctx: 128 plus
// the signal's number (130 for SIGINT, 143 for SIGTERM), or 130 when ctx
// ended some other way.
func InterruptStatus(ctx context.Context) int {
	var s *Signalled
	if errors.As(context.Cause(ctx), &s) {
		return 128 + int(s.Signal)
	}
	return 128 + int(syscall.SIGINT)
}
