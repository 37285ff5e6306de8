package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuickDefaults(t *testing.T) {
	var stderr bytes.Buffer
	cfg, err := parseFlags([]string{"--quick"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.count != 6 || cfg.benchtime.Milliseconds() != 10 {
		t.Errorf("--quick gave count %d benchtime %v", cfg.count, cfg.benchtime)
	}
	cfg, err = parseFlags([]string{"--quick", "--count", "2"}, &stderr)
	if err != nil || cfg.count != 2 {
		t.Errorf("--count not honoured with --quick: %v %v", cfg, err)
	}
}

// TestSubcommandTableIsTheOneList: -h, the stray-argument error and
// dispatch all come from the subcommand table, hidden entries stay out of
// the help, and every visible entry dispatches to its own function.
func TestSubcommandTableIsTheOneList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-h"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("-h exit %d", code)
	}
	help := stderr.String()
	stderr.Reset()
	Main([]string{"stray"}, &stdout, &stderr)
	stray := stderr.String()
	for _, c := range subcommands {
		line := "benchrun " + c.name + " "
		if c.hidden {
			if strings.Contains(help, line) {
				t.Errorf("-h shows the hidden subcommand %s", c.name)
			}
			continue
		}
		if !strings.Contains(help, line+c.usage) || !strings.Contains(help, c.doc) {
			t.Errorf("-h lacks %s's line:\n%s", c.name, help)
		}
		if !strings.Contains(stray, c.name) {
			t.Errorf("the stray-argument error does not name %s: %s", c.name, stray)
		}
		// With no arguments each visible subcommand answers with its own
		// usage line, exit 2: proof that dispatch reached it.
		stderr.Reset()
		if code := Main([]string{c.name}, &stdout, &stderr); code != ExitUsage {
			t.Errorf("benchrun %s without arguments: exit %d, want %d", c.name, code, ExitUsage)
		}
		if !strings.Contains(stderr.String(), "benchrun "+c.name) {
			t.Errorf("benchrun %s without arguments says %q, not naming itself", c.name, stderr.String())
		}
	}
}
