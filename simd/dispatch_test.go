package simd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	l := Levels()
	if len(l) == 0 || l[0] != LevelGeneric {
		t.Fatalf("Levels() = %v, want generic first", l)
	}
	if !slices.Contains(l, Level()) {
		t.Fatalf("Level() = %s not in Levels() = %v", Level(), l)
	}
	if !slices.Contains(l, bestLevel()) {
		t.Fatalf("bestLevel() = %s not in Levels() = %v", bestLevel(), l)
	}
}

func TestSetLevelErrors(t *testing.T) {
	before := Level()
	if err := SetLevel("sse9"); !errors.Is(err, ErrUnknownLevel) {
		t.Fatalf("SetLevel(sse9) = %v, want ErrUnknownLevel", err)
	}
	if Level() != before {
		t.Fatalf("failed SetLevel changed level to %s", Level())
	}
	for _, l := range []string{LevelAVX2, LevelAVX512} {
		if slices.Contains(Levels(), l) {
			continue
		}
		if err := SetLevel(l); !errors.Is(err, ErrUnsupportedLevel) {
			t.Fatalf("SetLevel(%s) on a CPU without it = %v, want ErrUnsupportedLevel", l, err)
		}
		if Level() != before {
			t.Fatalf("failed SetLevel changed level to %s", Level())
		}
	}
}

func TestChooseAtStart(t *testing.T) {
	best := bestLevel()
	k, err := chooseAtStart("")
	if err != nil || k.level != best {
		t.Fatalf("chooseAtStart(\"\") = %s, %v; want %s, nil", k.level, err, best)
	}
	for _, l := range Levels() {
		k, err := chooseAtStart(l)
		if err != nil || k.level != l {
			t.Fatalf("chooseAtStart(%s) = %s, %v", l, k.level, err)
		}
	}
	k, err = chooseAtStart("bogus")
	if !errors.Is(err, ErrUnknownLevel) || k.level != best {
		t.Fatalf("chooseAtStart(bogus) = %s, %v; want %s and ErrUnknownLevel", k.level, err, best)
	}
	for _, l := range []string{LevelAVX2, LevelAVX512} {
		if slices.Contains(Levels(), l) {
			continue
		}
		k, err := chooseAtStart(l)
		if !errors.Is(err, ErrUnsupportedLevel) || k.level != best {
			t.Fatalf("chooseAtStart(%s) = %s, %v; want fallback to %s", l, k.level, err, best)
		}
	}
}

// TestEnvOverride starts the test binary again with MEMRL_SIMD set and
// checks the level it chose at start, what EnvError says, and the warning.
func TestEnvOverride(t *testing.T) {
	if os.Getenv("SIMD_TEST_CHILD") == "1" {
		fmt.Printf("level=%s err=%v\n", Level(), EnvError())
		return
	}
	best := bestLevel()
	cases := []struct {
		env, level, errSub string
	}{
		{"", best, "<nil>"},
		{"generic", LevelGeneric, "<nil>"},
		{"bogus", best, "unknown kernel level"},
	}
	for _, l := range []string{LevelAVX2, LevelAVX512} {
		if slices.Contains(Levels(), l) {
			cases = append(cases, struct{ env, level, errSub string }{l, l, "<nil>"})
		} else {
			cases = append(cases, struct{ env, level, errSub string }{l, best, "not supported"})
		}
	}
	for _, c := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvOverride$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SIMD_TEST_CHILD=1", EnvVar+"="+c.env)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s=%q: child failed: %v\n%s%s", EnvVar, c.env, err, stdout.String(), stderr.String())
		}
		out := stdout.String()
		if !strings.Contains(out, "level="+c.level+" ") || !strings.Contains(out, c.errSub) {
			t.Fatalf("%s=%q: child said %q; want level %s and error containing %q", EnvVar, c.env, out, c.level, c.errSub)
		}
		warned := strings.Contains(stderr.String(), EnvVar+"=")
		if warned != (c.errSub != "<nil>") {
			t.Fatalf("%s=%q: stderr %q; warning expected: %v", EnvVar, c.env, stderr.String(), c.errSub != "<nil>")
		}
	}
}

// TestSetLevelConcurrent flips levels while other goroutines run kernels;
// under -race this checks that dispatch is race-free, and every result
// must still be right whichever set served it.
func TestSetLevelConcurrent(t *testing.T) {
	start := Level()
	defer SetLevel(start)
	a := make([]float32, 100)
	b := make([]float32, 100)
	for i := range a {
		a[i] = float32(i % 7)
		b[i] = float32(i%5) + 1
	}
	want := l2SqGeneric(a, b) // small integers: exact in every order
	done := make(chan struct{})
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if got := L2Sq(a, b); got != want {
					errs <- fmt.Errorf("L2Sq = %g, want %g (level %s)", got, want, Level())
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		for _, l := range Levels() {
			if err := SetLevel(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for g := 0; g < 2; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
