package wakerstate

import "testing"

func TestString(t *testing.T) {
	for s, want := range map[Status]string{
		NoStatus: "NO_STATUS", Waiting: "WAITING", Queued: "QUEUED", Ignored: "IGNORED", Result: "RESULT",
		Status(9): "WakerStatus(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
	// The values are part of the contract (the reference design's order).
	if NoStatus != 0 || Waiting != 1 || Queued != 2 || Ignored != 3 || Result != 4 {
		t.Error("status values changed: they must stay 0..4 in the reference design's order")
	}
}
