// Package units prints corobench figures for people: a value in a unit as
// written in a results file ("ns/switch", "B/coroutine", "p99-ns/wake",
// "req/s") becomes "12.3 ns", "4.30 KiB" or "41.2k", with the scale picked
// from the magnitude, so a table mixes 3 ns and 24 µs cells legibly.
package units

import (
	"fmt"
	"math"
	"strings"
)

// Kind is what a unit's numerator measures.
type Kind int

const (
	Count Kind = iota // a plain number: allocs, requests per second
	Time              // a duration, written in ns
	Bytes             // a size, written in B (or MB, KB)
)

// Unit is a parsed unit such as "p99-ns/wake".
type Unit struct {
	Written string  // as in the file
	Kind    Kind    //
	Stat    string  // statistic prefix: "p50", "p99", "max", or ""
	Base    float64 // value of one written unit in base units (s or B)
	Per     string  // denominator: "switch", "wake", "s", ...
}

// Parse parses a unit as written in a results file.
func Parse(unit string) Unit {
	u := Unit{Written: unit, Kind: Count, Base: 1}
	num, per, _ := strings.Cut(unit, "/")
	u.Per = per
	if i := strings.LastIndexByte(num, '-'); i >= 0 && isStat(num[:i]) {
		u.Stat, num = num[:i], num[i+1:]
	}
	switch num {
	case "ns", "cpu-ns": // cpu-ns: CPU time, not wall time
		u.Kind, u.Base = Time, 1e-9
	case "us", "µs":
		u.Kind, u.Base = Time, 1e-6
	case "ms":
		u.Kind, u.Base = Time, 1e-3
	case "s", "sec":
		u.Kind, u.Base = Time, 1
	case "B", "bytes":
		u.Kind, u.Base = Bytes, 1
	case "KB", "kB":
		u.Kind, u.Base = Bytes, 1e3
	case "MB":
		u.Kind, u.Base = Bytes, 1e6
	case "heap-B":
		u.Kind, u.Base = Bytes, 1
	}
	return u
}

// isStat reports whether s is a statistic prefix: pNN, max, min or mean.
func isStat(s string) bool {
	switch s {
	case "max", "min", "mean":
		return true
	}
	if len(s) < 2 || s[0] != 'p' {
		return false
	}
	for _, r := range s[1:] {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// Scale is a display scale: divide a value in the written unit by Div and
// print it followed by Symbol.
type Scale struct {
	Div    float64
	Symbol string // "ns", "µs", "KiB", "k", ""
}

// ScaleFor picks the scale that shows magnitude (in the written unit) with
// one to three digits before the point.
func (u Unit) ScaleFor(magnitude float64) Scale {
	m := math.Abs(magnitude) * u.Base
	switch u.Kind {
	case Time:
		for _, s := range []struct {
			f   float64
			sym string
		}{{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}} {
			if m >= s.f {
				return Scale{s.f / u.Base, s.sym}
			}
		}
		return Scale{1e-9 / u.Base, "ns"}
	case Bytes:
		for _, s := range []struct {
			f   float64
			sym string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if m >= s.f {
				return Scale{s.f / u.Base, s.sym}
			}
		}
		return Scale{1 / u.Base, "B"}
	}
	switch {
	case m >= 1e9:
		return Scale{1e9, "G"}
	case m >= 1e6:
		return Scale{1e6, "M"}
	case m >= 1e4:
		return Scale{1e3, "k"}
	}
	return Scale{1, ""}
}

// Label names what a value in this scale is, for an axis or a header:
// "µs per switch", "KiB per coroutine (RSS)", "p99 µs per wake", "req/s".
func (u Unit) Label(s Scale) string {
	if u.Kind == Count {
		if s.Symbol == "" {
			return u.Written
		}
		return s.Symbol + " " + u.Written
	}
	l := s.Symbol
	if u.Stat != "" {
		l = u.Stat + " " + l
	}
	if strings.HasPrefix(u.Written, "heap-") {
		l = "heap " + l
	}
	if u.Per != "" {
		l += " per " + u.Per
	}
	return l
}

// Format prints v (in the written unit) in scale s, to three significant
// digits: "12.3", "245", "0.71".
func (s Scale) Format(v float64) string {
	x := v / s.Div
	a := math.Abs(x)
	var str string
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x):
		str = fmt.Sprint(x)
	case x == math.Trunc(x) && a < 1e6:
		str = fmt.Sprintf("%.0f", x)
	case a >= 100:
		str = fmt.Sprintf("%.0f", x)
	case a >= 10:
		str = fmt.Sprintf("%.1f", x)
	case a >= 1:
		str = fmt.Sprintf("%.2f", x)
	default:
		str = fmt.Sprintf("%.3g", x)
	}
	if s.Symbol == "" {
		return str
	}
	if s.Symbol == "k" || s.Symbol == "M" || s.Symbol == "G" {
		return str + s.Symbol
	}
	return str + " " + s.Symbol
}

// Format prints v (in unit as written) at the scale its own magnitude
// picks: Format(24100, "ns/spawn") == "24.1 µs".
func Format(v float64, unit string) string {
	u := Parse(unit)
	return u.ScaleFor(v).Format(v)
}
