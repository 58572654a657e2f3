#include "textflag.h"

// func scanPQ8AMD64(codes *byte, m int, lut *float32, out *float32, n int)
//
// 8-bit ADC scan, scalar but unrolled by four sub-spaces with four
// independent sums, adding LUT entries straight from memory. A gather
// brings nothing here: it needs the same number of loads, and the loads
// (one code byte, one LUT float per sub-space) are the bound. Summation
// order is (s0+s1)+(s2+s3), as in scanPQ8Go.
TEXT ·scanPQ8AMD64(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), SI
	MOVQ m+8(FP), R9
	MOVQ lut+16(FP), R8
	MOVQ out+24(FP), DI
	MOVQ n+32(FP), BX

code:
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	MOVQ   R8, R10
	MOVQ   R9, CX
	CMPQ   CX, $4
	JLT    one

four:
	MOVBLZX (SI), AX
	MOVBLZX 1(SI), DX
	MOVBLZX 2(SI), R11
	MOVBLZX 3(SI), R12
	VADDSS  (R10)(AX*4), X0, X0
	VADDSS  1024(R10)(DX*4), X1, X1
	VADDSS  2048(R10)(R11*4), X2, X2
	VADDSS  3072(R10)(R12*4), X3, X3
	ADDQ    $4, SI
	ADDQ    $4096, R10
	SUBQ    $4, CX
	CMPQ    CX, $4
	JGE     four

one:
	TESTQ CX, CX
	JZ    sum

onel:
	MOVBLZX (SI), AX
	VADDSS  (R10)(AX*4), X0, X0
	INCQ    SI
	ADDQ    $1024, R10
	DECQ    CX
	JNZ     onel

sum:
	VADDSS X1, X0, X0
	VADDSS X3, X2, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (DI)
	ADDQ   $4, DI
	DECQ   BX
	JNZ    code
	RET
