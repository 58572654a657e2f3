package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Argument parsing shared by the MEM.* commands. Every parser returns an
// error whose text is the reply (the writer prefixes "ERR ").

// argList walks a command's arguments.
type argList struct {
	args [][]byte
	i    int
}

func (a *argList) more() bool { return a.i < len(a.args) }

func (a *argList) next(what string) ([]byte, error) {
	if a.i >= len(a.args) {
		return nil, fmt.Errorf("syntax error: %s expected", what)
	}
	a.i++
	return a.args[a.i-1], nil
}

func (a *argList) keyword() string {
	k := strings.ToUpper(string(a.args[a.i]))
	a.i++
	return k
}

func (a *argList) float(what string) (float64, error) {
	b, err := a.next(what)
	if err != nil {
		return 0, err
	}
	return parseFloat(b, what)
}

func (a *argList) int(what string) (int, error) {
	b, err := a.next(what)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return 0, fmt.Errorf("%s must be an integer, got %q", what, b)
	}
	return n, nil
}

func (a *argList) uint64(what string) (uint64, error) {
	b, err := a.next(what)
	if err != nil {
		return 0, err
	}
	return parseID(b, what)
}

func parseID(b []byte, what string) (uint64, error) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s must be a non-negative integer, got %q", what, b)
	}
	return n, nil
}

// parseFloat parses a finite decimal number.
func parseFloat(b []byte, what string) (float64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s must be a finite number, got %q", what, b)
	}
	return f, nil
}

// vector parses "FP32 blob" (little-endian float32 bytes, like Redis's
// VADD) or "VALUES d v1 ... vd". Component values are checked by the
// engine (NaN, Inf, dimension).
func (a *argList) vector() ([]float32, error) {
	if !a.more() {
		return nil, fmt.Errorf("syntax error: FP32 or VALUES expected")
	}
	switch a.keyword() {
	case "FP32":
		blob, err := a.next("FP32 blob")
		if err != nil {
			return nil, err
		}
		if len(blob)%4 != 0 || len(blob) == 0 {
			return nil, fmt.Errorf("FP32 blob must be a non-empty multiple of 4 bytes, got %d", len(blob))
		}
		v := make([]float32, len(blob)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:]))
		}
		return v, nil
	case "VALUES":
		d, err := a.int("VALUES count")
		if err != nil {
			return nil, err
		}
		if d < 1 || d > len(a.args)-a.i {
			return nil, fmt.Errorf("VALUES count %d does not match the %d numbers given", d, len(a.args)-a.i)
		}
		v := make([]float32, d)
		for i := range v {
			f, err := strconv.ParseFloat(string(a.args[a.i]), 32)
			if err != nil {
				return nil, fmt.Errorf("vector component %d is not a number: %q", i, a.args[a.i])
			}
			v[i] = float32(f)
			a.i++
		}
		return v, nil
	default:
		return nil, fmt.Errorf("syntax error: FP32 or VALUES expected, got %q", a.args[a.i-1])
	}
}
