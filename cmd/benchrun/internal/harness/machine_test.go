package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCPUIdleConfig reads a fake sysfs and procfs: a guest with the
// haltpoll driver and no halt polling, and a machine that gives nothing.
func TestCPUIdleConfig(t *testing.T) {
	root := t.TempDir() + "/"
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(root+path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root+path, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/devices/system/cpu/cpuidle/current_driver", "haltpoll")
	write("sys/devices/system/cpu/cpuidle/current_governor_ro", "haltpoll")
	write("sys/devices/system/cpu/cpu0/cpuidle/state0/name", "POLL")
	write("sys/devices/system/cpu/cpu0/cpuidle/state1/name", "haltpoll idle")
	write("sys/module/haltpoll/parameters/guest_halt_poll_ns", "0")
	write("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm")
	if got, want := cpuIdleConfig(root), "driver haltpoll, governor haltpoll, states POLL,haltpoll idle, guest_halt_poll_ns 0, hypervisor"; got != want {
		t.Errorf("guest: %q, want %q", got, want)
	}
	if got, want := cpuIdleConfig(t.TempDir()+"/"), "driver unknown, governor unknown, states unknown, hypervisor unknown"; got != want {
		t.Errorf("nothing readable: %q, want %q", got, want)
	}
}
