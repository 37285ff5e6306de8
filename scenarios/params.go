package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CoroutineBytes estimates the resident memory one coroutine costs in the
// hungriest row, for Param.BytesPer. Basis: the memory scenario's
// B/coroutine (RSS growth per suspended coroutine, stack and bookkeeping)
// in results/sample: at most 5.5 KiB (stackful-coro, n=1000..1000000;
// stackful-asm and the goroutine rows 4.8–5.4 KiB, stackless 1.4 KiB),
// rounded up to 6 KiB. The stackful rows' stack *reservations* (virtual
// address space beyond the touched pages) are not resident and not
// counted; a stack costs a mapping, which vm.max_map_count limits, and the
// row says so itself when it hits that limit.
const CoroutineBytes = 6 << 10

// IntLimit is the largest integer any size parameter accepts: 2^24
// coroutines (16,777,216) would need ~96 GiB at CoroutineBytes, so the
// memory check refuses long before; the limit keeps n*BytesPer far from
// overflow and names a range for a value like n=99999999999.
const IntLimit = 1 << 24

// Check reports whether v is a valid value of p, and if not, says why and
// what is valid.
func (p Param) Check(v string) error {
	if p.Max == 0 {
		if slices.Contains(p.Full, v) {
			return nil
		}
		return fmt.Errorf("%s=%s is not one of its values: %s", p.Key, v, strings.Join(p.Full, ", "))
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("%s=%s is not an integer; %s takes an integer in %s", p.Key, v, p.Key, p.Range())
	case n < int64(p.Min) || n > int64(p.Max):
		return fmt.Errorf("%s=%s is outside the valid range %s", p.Key, v, p.Range())
	}
	return nil
}

// Range is the valid values of p as text: "1..16777216" or "ready, pending".
func (p Param) Range() string {
	if p.Max == 0 {
		return strings.Join(p.Full, ", ")
	}
	return fmt.Sprintf("%d..%d", p.Min, p.Max)
}

// MemoryEstimate is the resident memory one cell with these parameters is
// expected to need, in bytes: the sum over its size parameters of value ×
// BytesPer (0 if it has none). Values must have passed Check.
func (s *Scenario) MemoryEstimate(params map[string]string) int64 {
	var total int64
	for _, p := range s.Params {
		if p.BytesPer == 0 || p.Max == 0 {
			continue
		}
		n, err := strconv.ParseInt(params[p.Key], 10, 64)
		if err != nil {
			continue
		}
		total += n * p.BytesPer
	}
	return total
}

// CheckCell checks one cell's parameters before it runs: each value against
// its parameter's declared type and range, and the cell's memory estimate
// against available bytes (skipped when available <= 0, i.e. unknown).
// The error names the scenario, the valid range and the fix.
func (s *Scenario) CheckCell(params map[string]string, available int64) error {
	for _, p := range s.Params {
		v, ok := params[p.Key]
		if !ok {
			continue
		}
		if err := p.Check(v); err != nil {
			return fmt.Errorf("%s: %v (%s); fix: --param %s=<value in %s>, e.g. --param %s=%s",
				s.Name, err, p.Doc, p.Key, p.Range(), p.Key, p.Full[0])
		}
	}
	if need := s.MemoryEstimate(params); available > 0 && need > available {
		var sizes []string
		for _, p := range s.Params {
			if p.BytesPer > 0 && p.Max > 0 {
				if v, ok := params[p.Key]; ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					most := available / p.BytesPer
					sizes = append(sizes, fmt.Sprintf("%s=%d × ~%d KiB (%s) = ~%s; %s up to about %d fits",
						p.Key, n, p.BytesPer>>10, p.Doc, gib(n*p.BytesPer), p.Key, most))
				}
			}
		}
		return fmt.Errorf("%s with %s needs about %s of memory but the machine has %s available (MemAvailable in /proc/meminfo): %s; "+
			"the cell would run the machine out of memory; fix: a smaller --param",
			s.Name, FormatParams(params), gib(need), gib(available), strings.Join(sizes, "; "))
	}
	return nil
}

func gib(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
