package bodies

//go:generate go run ../bodylines/bodylinesgen

// LineCount is how many lines of code one scenario's two bodies take:
// the blocking body shared by the stackful and goroutine rows, and the
// hand-lowered state machine of the stackless row. The difference is the
// cost of function colouring, measured. BodyLines (bodylines_gen.go) holds
// one per scenario, generated from the source by package scenarios/bodylines,
// whose doc states what is counted: each body's function and the
// package-level declarations it reaches (a task type brings its Resume
// method) in this package, minus what both bodies of the scenario share;
// what lies in other packages (the contract, the rows, the driver) is not
// a body and is not counted; non-blank, non-comment lines.
type LineCount struct {
	Blocking, StateMachine BodySize
}

// BodySize is one body's count. Lines is 0 only for a body the scenario
// does not define.
type BodySize struct {
	Lines int
	// Decls are the counted declarations with their lines, in source
	// order, so a reader can check Lines by hand.
	Decls []DeclLines
}

// DeclLines is one counted declaration: "pingPongSide",
// "(*pingPongSide).Resume", "func literal at calibrate.go:15", or the
// "const (" and ")" lines around a group of counted constants.
type DeclLines struct {
	Name  string
	Lines int
}

// Ratio returns the state-machine body's lines over the blocking body's,
// and false if either body is missing.
func (c LineCount) Ratio() (float64, bool) {
	if c.Blocking.Lines == 0 || c.StateMachine.Lines == 0 {
		return 0, false
	}
	return float64(c.StateMachine.Lines) / float64(c.Blocking.Lines), true
}
