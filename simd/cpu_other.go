//go:build !amd64

package simd

// Only the Go kernels exist off amd64.

func supportedLevels() []string { return []string{LevelGeneric} }

func bestLevel() string { return LevelGeneric }

func kernelsFor(string) *kernels { return genericKernels }
