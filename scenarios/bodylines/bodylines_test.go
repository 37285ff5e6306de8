package bodylines

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestFixture checks the counts of testdata/fixture against figures counted
// by hand (each Decl's lines are listed in its comment).
func TestFixture(t *testing.T) {
	got, err := Count("testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	want := []Scenario{
		{
			Name: "alpha",
			// func line, the two locals, return, closing brace; the comment
			// and blank lines do not count. shared is reached from both
			// bodies; helper is never reached (a local and a field share
			// its name); contract.Mix is in another package.
			Blocking: Body{Lines: 5, Decls: []Decl{{"alphaBlocking", 5}}},
			StateMachine: Body{Lines: 25, Decls: []Decl{
				{"const ( ) around alphaStart, alphaDone", 2}, // "const (" and ")"; alphaUnused is not reached
				{"alphaStart", 1},
				{"alphaDone", 1},
				{"errAlpha", 1},
				{"alphaTask", 4},           // type line, two fields, brace
				{"(*alphaTask).Resume", 8}, // reached only through its type; the block comment does not count
				{"alphaStateMachine", 8},
			}},
		},
		{
			Name: "beta",
			// The inline literal's one line, and the four lines of the raw
			// string it uses (the blank line inside the string counts).
			Blocking: Body{Lines: 5, Decls: []Decl{{"func literal at beta.go:8", 1}, {"betaText", 4}}},
		},
		{
			Name: "gamma",
			// gamma reuses alpha's blocking body and counts it, with
			// shared: gamma's state machine is nil, so nothing is shared.
			// gammaHelper is in register.go, which registers nothing:
			// counted all the same, for it is in the package.
			Blocking: Body{Lines: 15, Decls: []Decl{
				{"shared", 1},
				{"alphaBlocking", 5},
				{"betaText", 4},
				{"gammaBlocking", 3},
				{"betaWant", 1},
				{"gammaHelper", 1},
			}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Count(testdata/fixture):\n got %+v\nwant %+v", got, want)
	}
}

func TestCodeLines(t *testing.T) {
	src := "package p\n" + // 1
		"\n" + // 2
		"// doc\n" + // 3
		"func f() { /* c */ }\n" + // 4
		"/* a\n" + // 5
		"   b */\n" + // 6
		"var s = `x\n" + // 7
		"\n" + // 8
		"y` // t\n" + // 9
		"    \t\n" + // 10
		"var v = 1 /* one\n" + // 11
		"two */\n" // 12
	got, err := codeLines(token.NewFileSet(), "p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{1: true, 4: true, 7: true, 8: true, 9: true, 11: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("code lines %v, want %v", got, want)
	}
}

// TestErrors checks that what cannot be counted is refused with a message
// naming the place and the fix.
func TestErrors(t *testing.T) {
	const contract = "package p\n" +
		"type Scenario struct {\n\tName string\n\tBlocking, StateMachine func()\n}\n" +
		"func register(s *Scenario) *Scenario { return s }\n"
	for _, tc := range []struct {
		name, src, want string
	}{
		{"variable body", "package p\nvar body = func() {}\nvar _ = register(&Scenario{Name: \"x\", Blocking: body})\n",
			"the Blocking body of scenario \"x\" is body, a variable"},
		{"call body", "package p\nfunc mk() func() { return nil }\nvar _ = register(&Scenario{Name: \"x\", StateMachine: mk()})\n",
			"the StateMachine body of scenario \"x\" is mk(): only a function name or a function literal"},
		{"computed name", "package p\nconst n = \"x\"\nvar _ = register(&Scenario{Name: n})\n",
			"Name is not a string literal"},
		{"twice", "package p\nvar _ = register(&Scenario{Name: \"x\"})\nvar _ = register(&Scenario{Name: \"x\"})\n",
			"scenario \"x\" is registered twice"},
		{"type error", "package p\nvar _ = register(&Scenario{Name: \"x\", Blocking: missing})\n",
			"undefined: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "contract.go"), contract)
			write(t, filepath.Join(dir, "s.go"), tc.src)
			_, err := Count(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Count: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("no register func", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "p.go"), "package p\n")
		if _, err := Count(dir); err == nil || !strings.Contains(err.Error(), "has no func register") {
			t.Errorf("Count: %v", err)
		}
	})
	t.Run("build constraint", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "contract.go"), contract)
		write(t, filepath.Join(dir, "linux.go"), "//go:build linux\n\npackage p\n")
		if _, err := Count(dir); err == nil || !strings.Contains(err.Error(), "linux.go has a //go:build constraint") {
			t.Errorf("Count: %v", err)
		}
	})
	t.Run("no scenarios", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "contract.go"), contract)
		if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), "registers no scenarios") {
			t.Errorf("Generate: %v", err)
		}
	})
}

// TestGeneratedSource checks the generated file parses, carries the
// generated-code marker, and skips its own stale copy when counting.
func TestGeneratedSource(t *testing.T) {
	// Inside the module, so the copy can import the fixture's contract.
	dir, err := os.MkdirTemp("testdata", "gen-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range []string{"register.go", "alpha.go", "beta.go"} {
		b, err := os.ReadFile(filepath.Join("testdata/fixture", name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name), string(b))
	}
	// A stale, broken generated file must not stop regeneration.
	write(t, filepath.Join(dir, GeneratedFile), "package fixture\nvar BodyLines = undefined\n")
	src, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), GeneratedFile, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated source does not parse: %v\n%s", err, src)
	}
	if !ast.IsGenerated(f) {
		t.Error("the generated file lacks the \"Code generated ... DO NOT EDIT.\" line")
	}
	for _, want := range []string{
		`"alpha": {`,
		`Blocking: BodySize{Lines: 5, Decls: []DeclLines{`,
		`{"(*alphaTask).Resume", 8},`,
		`StateMachine: BodySize{}, // not defined`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
