package driver

import (
	"slices"
	"strconv"
	"strings"

	"github.com/corobench/corobench/scenarios"
)

// wantMemo remembers the checksums Scenario.Want returned during one
// measurement (MeasureWith), keyed on the scenario, its parameters and the
// iteration count, the only inputs Want's contract lets it read
// (Scenario.Want: "a correct run of env.N iterations with env's
// parameters"). Every run is still held to its checksum (check); only the
// recomputation is saved: the timed runs of a process all have the same N,
// and Want is a pass over the whole sequence the body made (calibrateWant
// mixes N values, yieldWant n×N), which was most of a Calibrate process's
// CPU time outside its timed regions when it ran after each of the ~8
// runs. A warm-up run's N differs from the timed runs', so it computes
// its own.
type wantMemo struct {
	wants map[wantKey]uint64
}

// wantKey is what a checksum depends on: the scenario, its parameters (in
// a canonical form, paramsKey) and the iteration count.
type wantKey struct {
	s      *scenarios.Scenario
	params string
	n      int
}

func newWantMemo() *wantMemo { return &wantMemo{wants: map[wantKey]uint64{}} }

// want returns s.Want(env), computed once per key; a nil memo computes it
// every time.
func (m *wantMemo) want(s *scenarios.Scenario, env *scenarios.Env) uint64 {
	if m == nil {
		return s.Want(env)
	}
	k := wantKey{s: s, params: paramsKey(env.Params), n: env.N}
	if w, ok := m.wants[k]; ok {
		return w
	}
	w := s.Want(env)
	m.wants[k] = w
	return w
}

// paramsKey is params as one string, the same for equal maps whatever
// their iteration order: the keys sorted, each pair quoted (so that no
// key or value can read as another pair).
func paramsKey(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(params[k]))
		b.WriteByte(';')
	}
	return b.String()
}
