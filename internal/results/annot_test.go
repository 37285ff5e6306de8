package results

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// Annotations read back as annotations, never as cells without a figure
// (Notes), and a misuse of the writer is refused.
func TestAnnotationsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, "corobench results")
	if err != nil {
		t.Fatal(err)
	}
	r := &benchfmt.Result{Name: benchfmt.Name("Switch/impl=stackful-asm"), Iters: 100,
		Values: []benchfmt.Value{{Value: 7, Unit: "ns/switch"}}}
	if err := w.Result(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Annotate(Annotation{Kind: AnnotSteal, Name: "Switch/impl=stackful-asm", Text: "rep 0: steal 30ms\n= 6.0% of 500ms"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Annotate(Annotation{Kind: AnnotReps, Name: "Switch/impl=stackful-asm", Text: "14 repetitions"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Annotate(Annotation{Kind: AnnotDisturbed, Name: "Switch/impl=stackful-asm", Text: "rep 3: 9.1 ns/switch not counted: 4 of 5 timed runs disturbed"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Annotate(Annotation{Kind: "noise", Name: "Switch/impl=stackful-asm", Text: "x"}); err == nil {
		t.Error("an unknown annotation kind was written")
	}
	if err := w.Annotate(Annotation{Kind: AnnotReps, Name: "Switch/impl=a b", Text: "x"}); err == nil {
		t.Error("a name with a space was written")
	}
	text := buf.String()
	f, err := Read(strings.NewReader(text), "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Results) != 1 || len(f.Notes) != 0 || len(f.Annotations) != 3 {
		t.Fatalf("got %d results, %d notes, %d annotations; want 1, 0, 3:\n%s", len(f.Results), len(f.Notes), len(f.Annotations), text)
	}
	a := f.Annotations[0]
	if a.Kind != AnnotSteal || a.Name != "Switch/impl=stackful-asm" || a.Text != "rep 0: steal 30ms = 6.0% of 500ms" || a.Line != 3 {
		t.Errorf("steal annotation = %+v\n%s", a, text)
	}
	if a := f.Annotations[1]; a.Kind != AnnotReps || a.Text != "14 repetitions" {
		t.Errorf("reps annotation = %+v", a)
	}
	// A disturbed repetition's figure is on a comment line: not a result.
	if a := f.Annotations[2]; a.Kind != AnnotDisturbed || !strings.HasPrefix(a.Text, "rep 3: 9.1 ns/switch not counted") {
		t.Errorf("disturbed annotation = %+v", a)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	bad, err := Read(strings.NewReader(text+"# corobench:reps BenchmarkSwitch: 3 repetitions\n"), "y.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "y.txt:6") {
		t.Errorf("annotation without a row: Check = %v, want an error at y.txt:6", err)
	}
}
