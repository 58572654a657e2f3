#include "textflag.h"

// func prefetchLines(p *byte, n int)
//
// Issues PREFETCHT0 for every 64-byte cache line that bytes [p, p+n) touch.
// A prefetch never faults and changes no architectural state, so the only
// effect is on the caches. REQUIRES: n >= 1.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DX // last byte
	ANDQ $-64, SI         // first line
	ANDQ $-64, DX         // last line

loop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	CMPQ       SI, DX
	JLE        loop
	RET
