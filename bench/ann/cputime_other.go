//go:build !linux

package ann

// threadCPU is not measured off Linux: cpu_us is then 0.
func threadCPU() int64 { return 0 }

// processCPU is not measured off Linux: cpu_us is then 0.
func processCPU() int64 { return 0 }
