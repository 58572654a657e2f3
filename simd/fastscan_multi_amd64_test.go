package simd

import (
	"testing"
	"unsafe"
)

// TestFastScanMultiArgsLayout: the offsets fastscan_multi_amd64.s reads.
func TestFastScanMultiArgsLayout(t *testing.T) {
	var a fastScanMultiArgs
	for name, got := range map[string]uintptr{
		"lut": unsafe.Offsetof(a.lut), "sums": unsafe.Offsetof(a.sums),
		"masks": unsafe.Offsetof(a.masks), "thresh": unsafe.Offsetof(a.thresh),
	} {
		want := map[string]uintptr{"lut": 0, "sums": 32, "masks": 64, "thresh": 96}[name]
		if got != want {
			t.Errorf("fastScanMultiArgs.%s at %d, the kernels read it at %d", name, got, want)
		}
	}
}
