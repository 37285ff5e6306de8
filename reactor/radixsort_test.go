package reactor

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortEveryDigitWidth: radixSort orders keys by their bits above
// slotBits, stably, for batch sizes and widths that make radixDigit pick
// every digit width from 1 to 8 bits (and widths that are not a multiple
// of it, so the last pass holds fewer bits), against a stable comparison
// sort.
func TestRadixSortEveryDigitWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	digits := map[int]bool{}
	for _, n := range []int{1, 2, 3, 7, 16, 64, 300, 1000, 5000, 70000} {
		for _, width := range []int{0, 1, 3, 7, 9, 13, 16, 17, 25, 40} {
			digits[radixDigit(width, n)] = width > 0
			keys := make([]uint64, n)
			for i := range keys {
				var off uint64
				if width > 0 {
					off = rng.Uint64N(1 << width)
					if i%5 == 0 && i > 0 { // ties: equal offsets keep their input order
						off = keys[i-1] >> slotBits
					}
				}
				keys[i] = off<<slotBits | uint64(rng.IntN(slotMask+1))
			}
			want := slices.Clone(keys)
			slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(a>>slotBits, b>>slotBits) })
			radixSort(keys, nil, width)
			if !slices.Equal(keys, want) {
				t.Fatalf("n=%d width=%d (digit %d bits): not the stable order by the bits above slotBits", n, width, radixDigit(width, n))
			}
		}
	}
	for d := 1; d <= radixMaxDigit; d++ {
		if !digits[d] {
			t.Errorf("no case sorted with %d-bit digits: widen the cases", d)
		}
	}
}
