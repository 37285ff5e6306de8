// Package bodylines counts, from the source, how many lines each scenario's
// blocking body and state-machine body take: the cost of function colouring,
// measured. scenarios/bodies/bodylines_gen.go is its output (go generate in
// scenarios/bodies); a test there regenerates it in memory and fails if the
// committed file is stale, so the figures cannot drift from the code.
//
// # What is counted
//
// The package is type-checked (go/types, imports from the compiler's export
// data via `go list -export`), so every identifier is resolved as the
// compiler resolves it: a local variable that shadows a package-level name,
// a struct field key or a field selector is never taken for a declaration.
// The unit of counting is a package-level declaration: a function, a
// method, or one spec of a const, var or type declaration. Then, for each
// register(&Scenario{...}) call in the package's non-test files:
//
//  1. Roots. The body is the value of the literal's Blocking (or
//     StateMachine) field: the name of a package-level function, or an
//     inline function literal, which is then counted itself.
//  2. Reach. A body reaches every package-level declaration of the
//     package its source refers to, transitively. A type reaches all of its
//     methods, wherever they are declared: the scheduler calls a task's
//     Resume through an interface, so the only reference to it is the type.
//     The package boundary is the harness boundary: what the body uses from
//     other packages (the scenarios contract, the rows, the runtimes) is
//     neither counted nor followed, and everything declared in the package
//     is scenario code. The scenario definitions themselves (the var
//     holding a register call) are not counted.
//  3. Colour-specific code. A declaration reached from both bodies of the
//     same scenario is shared by the two colours (checksums such as mix,
//     parameter checks, outcome builders, the load generator) and counted
//     in neither. What is left of each body's reach is its count.
//  4. Lines. A line counts when it holds a Go token other than a comment:
//     blank lines, comment lines and doc comments do not count, a line with
//     code and a trailing comment does, and a multi-line raw string counts
//     every line it spans. A function or method counts from its func
//     keyword to its closing brace; an ungrouped const, var or type from
//     its keyword to its end; a spec in a grouped declaration counts its own
//     lines, and the group's "const (" and ")" lines count once, listed as
//     their own entry, when a body counts any of its specs. A line is
//     counted once per body, however many counted declarations share it.
//
// Code reused across scenarios is counted in every scenario whose body
// reaches it, colour by colour: handoff's bodies call pingpong's, so its
// counts include pingpong's bodies, and burst's state machine spawns
// memory's memoryTask, so burst counts it. That is the code a reader must
// read to see that body; a "used by several scenarios" exclusion would
// drop exactly those state machines. Helpers used by many scenarios that
// are not colour-specific (mix, summarizeLatencies, residentBytes) are
// reached from both bodies of each scenario and so drop out by rule 3.
//
// Every counted declaration is listed with its lines beside each count, so
// a reader can check a figure by hand.
package bodylines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Scenario is the count for one register(&Scenario{...}) call.
type Scenario struct {
	Name                   string // the literal's Name field
	Blocking, StateMachine Body
}

// Body is one body's count. A missing body (the field absent or nil) has
// Lines 0 and no Decls; a present one has at least one line.
type Body struct {
	Lines int
	// Decls are the counted declarations in source order (file name, then
	// offset), each with its own code lines.
	Decls []Decl
}

// Decl is one counted declaration.
type Decl struct {
	// Name is the declaration as a reader searches for it: "pingPongSide",
	// "(*pingPongSide).Resume", or "func literal at calibrate.go:15".
	Name  string
	Lines int
}

// Count parses and type-checks the Go package in dir (its non-test files
// other than GeneratedFile) and returns the count of every registered scenario, in source order
// (file name, then offset).
func Count(dir string) ([]Scenario, error) {
	_, ss, err := load(dir)
	return ss, err
}

// load returns dir's package name and its scenarios' counts.
func load(dir string) (pkgName string, ss []Scenario, err error) {
	fset := token.NewFileSet()
	files, srcs, err := parseDir(fset, dir)
	if err != nil {
		return "", nil, err
	}
	ss, err = count(fset, dir, files, srcs)
	return files[0].Name.Name, ss, err
}

// parseDir parses dir's .go files other than tests, sorted by name.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, map[string][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	var files []*ast.File
	srcs := map[string][]byte{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == GeneratedFile {
			// The generated file is this package's output: leaving it out
			// means a stale or broken one cannot stop its regeneration.
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, fmt.Errorf("bodylines: %w", err)
		}
		if !buildable(f) {
			return nil, nil, fmt.Errorf("bodylines: %s has a //go:build constraint, which bodylines does not evaluate: "+
				"move the constrained code out of the scenario package or teach bodylines to evaluate constraints", name)
		}
		files = append(files, f)
		srcs[name] = src
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("bodylines: no Go files in %s", dir)
	}
	return files, srcs, nil
}

// buildable reports whether f has no build constraint. The scenarios
// package has none; a constrained file would need the constraint
// evaluated, so the caller refuses it rather than guess.
func buildable(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") {
				return false
			}
		}
	}
	return true
}

// unit is one countable declaration: a FuncDecl, or one spec of a GenDecl.
type unit struct {
	name    string
	file    string // base name
	node    ast.Node
	lines   []int  // the code lines it spans (sorted), in file
	harness bool   // a boundary: neither counted nor followed
	group   *group // the grouped declaration a spec is in, or nil
	refs    []*unit
	methods []*unit // for a type: its methods
}

// group is a parenthesised const, var or type declaration. Its "const ("
// and ")" lines count once with the first of its specs a body counts.
type group struct {
	decl  *ast.GenDecl
	lines []int
}

// counter holds the type-checked package and its units.
type counter struct {
	fset   *token.FileSet
	pkg    *types.Package
	info   *types.Info
	units  []*unit
	byObj  map[types.Object]*unit
	code   map[string]map[int]bool // file → lines holding code
	byFile map[*ast.File]string
}

func count(fset *token.FileSet, dir string, files []*ast.File, srcs map[string][]byte) ([]Scenario, error) {
	imp, err := exportImporter(fset, dir, files)
	if err != nil {
		return nil, err
	}
	info := &types.Info{
		Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{},
	}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(files[0].Name.Name, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("bodylines: type-checking %s: %w", dir, err)
	}
	c := &counter{fset: fset, pkg: pkg, info: info, byObj: map[types.Object]*unit{},
		code: map[string]map[int]bool{}, byFile: map[*ast.File]string{}}
	for _, f := range files {
		name := fset.File(f.Pos()).Name()
		c.byFile[f] = name
		lines, err := codeLines(fset, name, srcs[name])
		if err != nil {
			return nil, err
		}
		c.code[name] = lines
	}
	regFunc, ok := pkg.Scope().Lookup("register").(*types.Func)
	if !ok {
		return nil, fmt.Errorf("bodylines: package %s in %s has no func register: nothing registers scenarios", pkg.Name(), dir)
	}
	var regs []*ast.CompositeLit
	for _, f := range files {
		fileRegs := registerCalls(f, info, regFunc)
		c.addUnits(f)
		regs = append(regs, fileRegs...)
	}
	c.link()
	var out []Scenario
	seen := map[string]bool{}
	for _, lit := range regs {
		s, err := c.scenario(lit)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("bodylines: %s: scenario %q is registered twice", c.pos(lit), s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

// exportImporter returns an importer reading the compiler's export data of
// the files' imports (and their dependencies), located with go list. It
// builds the imports if needed, but never the package itself, so a stale
// or broken generated file in it cannot stop its own regeneration.
func exportImporter(fset *token.FileSet, dir string, files []*ast.File) (types.Importer, error) {
	var paths []string
	for _, f := range files {
		for _, is := range f.Imports {
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("bodylines: %s: bad import path %s", fset.Position(is.Pos()), is.Path.Value)
			}
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	exports := map[string]string{}
	if len(paths) > 0 {
		sort.Strings(paths)
		cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export,Error"}, paths...)...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("bodylines: go list -export of the imports of %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath, Export string
				Error              *struct{ Err string }
			}
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("bodylines: reading go list's output: %w", err)
			}
			if p.Error != nil {
				return nil, fmt.Errorf("bodylines: import %s: %s", p.ImportPath, p.Error.Err)
			}
			exports[p.ImportPath] = p.Export
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s (go list did not build it)", path)
		}
		return os.Open(file)
	}), nil
}

// codeLines returns the lines of src holding a token other than a comment.
// The scanner skips comments and reports the semicolons it inserts at line
// ends with the literal "\n"; those are not code. A token spanning lines (a
// raw string) marks every line it spans.
func codeLines(fset *token.FileSet, name string, src []byte) (map[int]bool, error) {
	var errs scanner.ErrorList
	file := token.NewFileSet().AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		first := file.Line(pos)
		last := first + strings.Count(lit, "\n")
		for l := first; l <= last; l++ {
			lines[l] = true
		}
	}
	if err := errs.Err(); err != nil {
		return nil, fmt.Errorf("bodylines: %w", err)
	}
	return lines, nil
}

// registerCalls returns the Scenario literals of the register(&Scenario{...})
// calls in f.
func registerCalls(f *ast.File, info *types.Info, register *types.Func) []*ast.CompositeLit {
	var lits []*ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		id, ok := ast.Unparen(call.Fun).(*ast.Ident)
		if !ok || info.Uses[id] != register || len(call.Args) != 1 {
			return true
		}
		if u, ok := ast.Unparen(call.Args[0]).(*ast.UnaryExpr); ok && u.Op == token.AND {
			if lit, ok := u.X.(*ast.CompositeLit); ok {
				lits = append(lits, lit)
			}
		}
		return true
	})
	return lits
}

// addUnits adds f's declarations. A declaration that holds a register
// call (a scenario's definition) is a boundary: neither counted nor
// followed.
func (c *counter) addUnits(f *ast.File) {
	name := c.byFile[f]
	base := filepath.Base(name)
	holdsRegister := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(m ast.Node) bool {
			if call, ok := m.(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && c.info.Uses[id] == c.pkg.Scope().Lookup("register") {
					found = true
				}
			}
			return !found
		})
		return found
	}
	add := func(u *unit, objs ...types.Object) {
		u.file = base
		u.harness = holdsRegister(u.node)
		c.units = append(c.units, u)
		for _, o := range objs {
			if o != nil {
				c.byObj[o] = u
			}
		}
	}
	groups := map[*ast.GenDecl]*group{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			obj := c.info.Defs[d.Name]
			u := &unit{name: funcName(d), node: d, lines: c.span(name, d.Pos(), d.End())}
			if d.Name.Name == "init" && d.Recv == nil {
				// init is called by nobody: it is never reached.
				obj = nil
			}
			add(u, obj)
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			for _, spec := range d.Specs {
				u := &unit{node: spec}
				if d.Lparen.IsValid() {
					u.lines = c.span(name, spec.Pos(), spec.End())
					u.group = &group{decl: d, lines: append(c.span(name, d.Lparen, d.Lparen+1), c.span(name, d.Rparen, d.Rparen+1)...)}
					if groups[d] == nil {
						groups[d] = u.group
					}
					u.group = groups[d]
				} else {
					u.lines = c.span(name, d.Pos(), d.End())
				}
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					u.name = spec.Name.Name
					add(u, c.info.Defs[spec.Name])
				case *ast.ValueSpec:
					var names []string
					var objs []types.Object
					for _, n := range spec.Names {
						names = append(names, n.Name)
						objs = append(objs, c.info.Defs[n])
					}
					u.name = strings.Join(names, ", ")
					add(u, objs...)
				}
			}
		}
	}
}

// span returns the code lines of file from pos to end.
func (c *counter) span(file string, pos, end token.Pos) []int {
	first, last := c.fset.Position(pos).Line, c.fset.Position(end).Line
	var lines []int
	for l := first; l <= last; l++ {
		if c.code[file][l] {
			lines = append(lines, l)
		}
	}
	return lines
}

// funcName names a function or method as a reader searches for it.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	recv := types.ExprString(d.Recv.List[0].Type)
	if strings.HasPrefix(recv, "*") {
		recv = "(" + recv + ")"
	}
	return recv + "." + d.Name.Name
}

// link records each unit's references to other units, and each type's
// methods.
func (c *counter) link() {
	for _, u := range c.units {
		u.refs = c.refs(u.node)
		if fd, ok := u.node.(*ast.FuncDecl); ok && fd.Recv != nil {
			if m, ok := c.info.Defs[fd.Name].(*types.Func); ok {
				recv := m.Signature().Recv().Type()
				if p, ok := recv.(*types.Pointer); ok {
					recv = p.Elem()
				}
				if named, ok := recv.(*types.Named); ok {
					if tu := c.byObj[named.Obj()]; tu != nil {
						tu.methods = append(tu.methods, u)
					}
				}
			}
		}
	}
}

// refs returns the units the identifiers in n refer to, in first-use order.
// Uses holds package-level objects and methods of this package (reached
// through a selector), and nothing for field names, struct literal keys or
// locals' declarations; locals' uses map to objects that have no unit.
func (c *counter) refs(n ast.Node) []*unit {
	var out []*unit
	ast.Inspect(n, func(m ast.Node) bool {
		id, ok := m.(*ast.Ident)
		if !ok {
			return true
		}
		obj := c.info.Uses[id]
		if obj == nil || obj.Pkg() != c.pkg {
			return true
		}
		if f, ok := obj.(*types.Func); ok {
			obj = f.Origin() // a method of an instantiated generic type
		}
		if u := c.byObj[obj]; u != nil && !slices.Contains(out, u) {
			out = append(out, u)
		}
		return true
	})
	return out
}

// reach returns the units reachable from root's references (root itself
// when it is a unit), stopping at harness units.
func (c *counter) reach(start []*unit) map[*unit]bool {
	seen := map[*unit]bool{}
	var walk func(u *unit)
	walk = func(u *unit) {
		if seen[u] || u.harness {
			return
		}
		seen[u] = true
		for _, r := range u.refs {
			walk(r)
		}
		for _, m := range u.methods {
			walk(m)
		}
	}
	for _, u := range start {
		walk(u)
	}
	return seen
}

// root returns the units a body starts from: the function it names, or,
// for a function literal, a unit for the literal itself.
func (c *counter) root(scenario, field string, e ast.Expr) ([]*unit, error) {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if e.Name == "nil" && c.info.Uses[e] == types.Universe.Lookup("nil") {
			return nil, nil
		}
		u := c.byObj[c.info.Uses[e]]
		if u == nil {
			return nil, fmt.Errorf("bodylines: %s: the %s body of scenario %q is %s, which is not a package-level declaration", c.pos(e), field, scenario, e.Name)
		}
		if _, ok := u.node.(*ast.FuncDecl); !ok {
			return nil, fmt.Errorf("bodylines: %s: the %s body of scenario %q is %s, a variable: name a function or write a function literal, so its source can be counted", c.pos(e), field, scenario, e.Name)
		}
		return []*unit{u}, nil
	case *ast.FuncLit:
		file := c.fset.Position(e.Pos()).Filename
		return []*unit{{
			name:  fmt.Sprintf("func literal at %s:%d", filepath.Base(file), c.fset.Position(e.Pos()).Line),
			file:  filepath.Base(file),
			node:  e,
			lines: c.span(file, e.Pos(), e.End()),
			refs:  c.refs(e),
		}}, nil
	default:
		return nil, fmt.Errorf("bodylines: %s: the %s body of scenario %q is %s: only a function name or a function literal can be counted", c.pos(e), field, scenario, types.ExprString(e))
	}
}

func (c *counter) pos(n ast.Node) token.Position {
	p := c.fset.Position(n.Pos())
	p.Filename = filepath.Base(p.Filename)
	return p
}

// scenario counts one register literal.
func (c *counter) scenario(lit *ast.CompositeLit) (Scenario, error) {
	fields := map[string]ast.Expr{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return Scenario{}, fmt.Errorf("bodylines: %s: the Scenario literal has unkeyed fields: key them (Name: ..., Blocking: ...)", c.pos(lit))
		}
		if k, ok := kv.Key.(*ast.Ident); ok {
			fields[k.Name] = kv.Value
		}
	}
	nameLit, ok := fields["Name"].(*ast.BasicLit)
	if !ok || nameLit.Kind != token.STRING {
		return Scenario{}, fmt.Errorf("bodylines: %s: the Scenario literal's Name is not a string literal: write the name literally so it can be read from the source", c.pos(lit))
	}
	name, err := strconv.Unquote(nameLit.Value)
	if err != nil {
		return Scenario{}, fmt.Errorf("bodylines: %s: %w", c.pos(nameLit), err)
	}
	var roots [2][]*unit
	for i, field := range []string{"Blocking", "StateMachine"} {
		if e, ok := fields[field]; ok {
			if roots[i], err = c.root(name, field, e); err != nil {
				return Scenario{}, err
			}
		}
	}
	reachB, reachM := c.reach(roots[0]), c.reach(roots[1])
	return Scenario{
		Name:         name,
		Blocking:     c.body(reachB, reachM),
		StateMachine: c.body(reachM, reachB),
	}, nil
}

// body counts the units of mine that other does not reach.
func (c *counter) body(mine, other map[*unit]bool) Body {
	var us []*unit
	for u := range mine {
		if !other[u] {
			us = append(us, u)
		}
	}
	slices.SortFunc(us, func(a, b *unit) int {
		if a.file != b.file {
			return strings.Compare(a.file, b.file)
		}
		return int(a.node.Pos() - b.node.Pos())
	})
	var b Body
	lines := map[string]map[int]bool{}
	count := func(file string, ls []int) {
		if lines[file] == nil {
			lines[file] = map[int]bool{}
		}
		for _, l := range ls {
			lines[file][l] = true
		}
	}
	groupDone := map[*group]bool{}
	for _, u := range us {
		if g := u.group; g != nil && !groupDone[g] {
			groupDone[g] = true
			var names []string
			for _, v := range us {
				if v.group == g {
					names = append(names, v.name)
				}
			}
			b.Decls = append(b.Decls, Decl{
				Name:  fmt.Sprintf("%s ( ) around %s", g.decl.Tok, strings.Join(names, ", ")),
				Lines: len(g.lines),
			})
			count(u.file, g.lines)
		}
		b.Decls = append(b.Decls, Decl{Name: u.name, Lines: len(u.lines)})
		count(u.file, u.lines)
	}
	for _, ls := range lines {
		b.Lines += len(ls)
	}
	return b
}
