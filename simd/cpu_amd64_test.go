package simd

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// TestPreferAVX512 pins which CPUs default to the 512-bit kernels.
func TestPreferAVX512(t *testing.T) {
	for _, c := range []struct {
		v      cpuid.Vendor
		family int
		want   bool
	}{
		{cpuid.Intel, 6, true},
		{cpuid.AMD, 0x19, false}, // Zen 3 and Zen 4: 512-bit ops in two halves
		{cpuid.AMD, 0x1A, true},  // Zen 5
		{cpuid.AMD, 0x1B, true},
		{cpuid.Hygon, 0x18, false},
		{cpuid.VendorUnknown, 0x1A, false},
	} {
		if got := preferAVX512(c.v, c.family); got != c.want {
			t.Errorf("preferAVX512(%v, %#x) = %v, want %v", c.v, c.family, got, c.want)
		}
	}
}
