package harness

import (
	"regexp"
	"strings"
)

// failureReason picks, from a failed child's stderr, the line that says
// what went wrong, for the one-line note in the results file. In order:
//  1. the error the child wrote itself (ChildMain's "cell error:" line,
//     e.g. a deadlock report or the vm.max_map_count sysctl hint);
//  2. the first line of a Go panic or fatal error ("panic: …",
//     "fatal error: all goroutines are asleep - deadlock!") or of a fatal
//     signal ("SIGSEGV: segmentation violation");
//  3. the first line that is not part of a stack dump;
//  4. noStderr.
//
// Never a stack frame: a goroutine dump's last line is a file:line that
// says nothing about the cause.
func failureReason(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, cellErrorPrefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || fatalSignalRE.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !isStackLine(l) {
			return t
		}
	}
	return noStderr
}

// noStderr is the reason of a child that said nothing useful.
const noStderr = "(no stderr)"

var (
	fatalSignalRE = regexp.MustCompile(`^SIG[A-Z]+: `)
	// A frame's function line ("main.main()", "pkg.(*T).m(0x1, ...)"),
	// a goroutine header, or a frame's file line.
	funcLineRE = regexp.MustCompile(`^[\w./*()\[\]-]+\(.*\)$`)
	fileLineRE = regexp.MustCompile(`\.(go|s|c):\d+( \+0x[0-9a-f]+)?$`)
)

func isStackLine(l string) bool {
	return strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "created by ") ||
		strings.HasPrefix(l, "[signal ") || funcLineRE.MatchString(l) || fileLineRE.MatchString(l)
}
