package bodies

import (
	"errors"
	"testing"

	"github.com/corobench/corobench/impl/stackful"
)

// runOnStackful runs body as the main coroutine of a fresh stackful
// scheduler with the given backend, under the collector-off policy the
// asm backend needs, and returns the scheduler (for its Stats) and the
// body's error. It skips the test if the backend cannot run here.
func runOnStackful(t *testing.T, backend stackful.Backend, body func() error) *stackful.Scheduler {
	t.Helper()
	return runOnStackfulWith(t, stackful.Options{Backend: backend}, body)
}

// runOnStackfulWith is runOnStackful with all options.
func runOnStackfulWith(t *testing.T, opts stackful.Options, body func() error) *stackful.Scheduler {
	t.Helper()
	s, err := stackful.New(opts)
	if errors.Is(err, stackful.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var bodyErr error
	if err := s.Run(func() { bodyErr = body() }); err != nil {
		t.Fatal(err)
	}
	if bodyErr != nil {
		t.Fatal(bodyErr)
	}
	return s
}
