package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Two runs at once on one machine disturb each other's timings (they share
// cores, caches and memory bandwidth) and neither would know. So a run holds
// a lock for the machine, not for its output directory: an flock on a file
// at a well-known path. A second run waits for it, saying which process
// holds it; Ctrl-C gives up. The kernel drops an flock when its holder
// dies however it dies, so a killed run never leaves a stale lock; the
// holder's pid written in the file is only for the message. The lock's file
// descriptor is close-on-exec, so the cells' children do not hold it.

// LockEnv names the environment variable that overrides the lock's path.
// Tests set it to a file of their own, so that `go test ./...`, which runs
// packages in parallel, neither serialises on the machine lock nor waits
// for a real run.
const LockEnv = "COROBENCH_LOCK"

// DefaultLockPath is the machine lock's path: $COROBENCH_LOCK if set, else
// /run/lock/corobench-benchrun.lock where /run/lock is writable, else
// /tmp/corobench-benchrun.lock. Not os.TempDir(): $TMPDIR may differ
// between users of one machine.
func DefaultLockPath() string {
	if p := os.Getenv(LockEnv); p != "" {
		return p
	}
	const name = "corobench-benchrun.lock"
	if unix.Access("/run/lock", unix.W_OK) == nil {
		return filepath.Join("/run/lock", name)
	}
	return filepath.Join("/tmp", name)
}

// lockPoll is how often a waiting run tries the lock again.
const lockPoll = 200 * time.Millisecond

// acquireLock takes the machine lock at path, waiting (and telling w once)
// while another run holds it, until ctx is done. The lock is held until the
// returned file is closed.
func acquireLock(ctx context.Context, path, runstamp string, w io.Writer) (*os.File, error) {
	f, writable, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open the machine lock %s: %w (set %s to another path)", path, err, LockEnv)
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("cannot take the machine lock %s: %w", path, err)
		}
		if !told {
			told = true
			fmt.Fprintf(w, "benchrun: waiting for another run to finish (%s, lock %s): two runs at once would disturb each other's timings; Ctrl-C to give up\n",
				holder(path), path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("gave up waiting for the machine lock %s, held by %s: %w", path, holder(path), context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
	if writable {
		// Say who holds it, for the message of the next run.
		info := fmt.Sprintf("pid %d, run %s, started %s", os.Getpid(), runstamp, time.Now().UTC().Format(time.RFC3339))
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(info+"\n"), 0)
		}
	}
	return f, nil
}

// openLockFile opens path for the lock, creating it readable and writable
// by every user (the lock is the machine's, not one user's). An existing
// file of another user that we may not write is opened read-only: flock
// works on it all the same, we only cannot record our pid.
func openLockFile(path string) (f *os.File, writable bool, err error) {
	// Without O_CREAT first: in a sticky world-writable directory
	// (protected_regular) O_CREAT on another user's file fails.
	if f, err = os.OpenFile(path, os.O_RDWR, 0); err == nil {
		return f, true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666); err == nil {
			_ = f.Chmod(0o666) // past the umask
			return f, true, nil
		}
		if errors.Is(err, os.ErrExist) { // another run created it first
			return openLockFile(path)
		}
		return nil, false, err
	}
	if f, err2 := os.Open(path); err2 == nil {
		return f, false, nil
	}
	return nil, false, err
}

// holder describes the lock's holder from what it wrote in the file.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return "another benchrun: " + s
	}
	return "another benchrun, pid unknown"
}
