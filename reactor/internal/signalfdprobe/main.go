// Command signalfdprobe shows why package reactor does not use signalfd
// under the Go runtime. It blocks SIGUSR1 on one locked thread, reads it
// through a signalfd, and sends SIGUSR1 twenty times process-directed
// (kill) and twenty times thread-directed (tgkill to that thread).
//
// signalfd only receives signals that are blocked in the receiving thread.
// Go offers no way to block a signal in all threads, so a process-directed
// signal is taken by another thread's Go handler (which, for SIGUSR1 without
// signal.Notify, drops it). Thread-directed signals, the control, arrive.
//
// Run: go run ./reactor/internal/signalfdprobe
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	runtime.LockOSThread()
	var set unix.Sigset_t
	set.Val[0] = 1 << (uint(unix.SIGUSR1) - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		fail("pthread_sigmask", err)
	}
	sfd, err := unix.Signalfd(-1, &set, unix.SFD_NONBLOCK|unix.SFD_CLOEXEC)
	if err != nil {
		fail("signalfd", err)
	}
	// Make sure the runtime has other threads around, as any real program does.
	done := make(chan bool)
	for range 4 {
		go func() {
			ts := unix.Timespec{Nsec: 1e6}
			for {
				select {
				case <-done:
					return
				default:
					unix.Nanosleep(&ts, nil) // a blocking syscall: keeps threads alive
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	pid, tid := unix.Getpid(), unix.Gettid()
	count := func(send func() error) int {
		got := 0
		buf := make([]byte, 128*8)
		for range 20 {
			if err := send(); err != nil {
				fail("sending SIGUSR1", err)
			}
			time.Sleep(2 * time.Millisecond)
			for {
				n, err := unix.Read(sfd, buf)
				if err != nil || n <= 0 {
					break
				}
				got += n / 128 // one signalfd_siginfo is 128 bytes
			}
		}
		return got
	}
	proc := count(func() error { return unix.Kill(pid, unix.SIGUSR1) })
	thread := count(func() error { return unix.Tgkill(pid, tid, unix.SIGUSR1) })
	close(done)
	fmt.Printf("%s %s/%s, %d threads\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, threads())
	fmt.Printf("process-directed kill(SIGUSR1): signalfd received %d of 20\n", proc)
	fmt.Printf("thread-directed tgkill(SIGUSR1): signalfd received %d of 20\n", thread)
}

func threads() int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	return len(ents)
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "signalfdprobe: %s: %v\n", what, err)
	os.Exit(1)
}
