package simd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoLegacySSE holds the amd64 kernels to VEX and EVEX instructions
// wherever they name an X, Y or Z register. A legacy-SSE instruction (MOVD,
// MOVQ, MOVSS, … into an X register) that runs while a Y register's upper
// half holds data cost about 110 ns each time on the Zen 3 dev VM, more
// than a block's fast scan (BENCH.md, "SSE after AVX"), and no result test
// can see it: FastScan4AVX2 paid it twice a call until this test.
func TestNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no amd64 assembly found (%v)", err)
	}
	vreg := regexp.MustCompile(`\b[XYZ]([0-9]|[12][0-9]|3[01])\b`)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if c := strings.Index(line, "//"); c >= 0 {
				line = line[:c]
			}
			// A macro's body holds several instructions a line.
			for _, ins := range strings.Split(strings.TrimSuffix(strings.TrimSpace(line), `\`), ";") {
				f := strings.Fields(ins)
				if len(f) < 2 || f[0] == "#define" || f[0] == "TEXT" || strings.Contains(f[0], "(") {
					continue // not an instruction, or a macro's use (its body is checked)
				}
				if vreg.MatchString(strings.Join(f[1:], " ")) && !strings.HasPrefix(f[0], "V") && f[0] != "KMOVW" && f[0] != "KMOVD" && f[0] != "KMOVQ" {
					t.Errorf("%s:%d: %s names a vector register without a VEX encoding", name, i+1, strings.TrimSpace(ins))
				}
			}
		}
	}
}
