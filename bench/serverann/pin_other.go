//go:build !linux

package serverann

import "errors"

// pinProcess is Linux only (sched_setaffinity).
func pinProcess(cpus string) (func() error, error) {
	return nil, errors.New("--client-cpus needs Linux")
}
