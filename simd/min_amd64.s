#include "textflag.h"

// func minAVX2(v *float32, n int) float32
//
// The smallest of n floats: four 8-lane running minimums over 32 floats a
// step, then 8 at a time, then one at a time; the lanes are folded at the
// end. VMINPS returns its second source operand when either is NaN, so a
// NaN in v may or may not be returned (callers pass no NaN).
// REQUIRES: n >= 1.
TEXT ·minAVX2(SB), NOSPLIT, $0-20
	MOVQ         v+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	CMPQ         CX, $32
	JLT          eight

loop32:
	VMINPS (SI), Y0, Y0
	VMINPS 32(SI), Y1, Y1
	VMINPS 64(SI), Y2, Y2
	VMINPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	CMPQ   CX, $32
	JGE    loop32

eight:
	VMINPS Y1, Y0, Y0
	VMINPS Y3, Y2, Y2
	VMINPS Y2, Y0, Y0
	CMPQ   CX, $8
	JLT    fold

loop8:
	VMINPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	CMPQ   CX, $8
	JGE    loop8

fold:
	VEXTRACTF128 $1, Y0, X1
	VMINPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMINPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMINSS       X1, X0, X0
	TESTQ        CX, CX
	JZ           done

loop1:
	VMINSS (SI), X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JNZ    loop1

done:
	VMOVSS     X0, ret+16(FP)
	VZEROUPPER
	RET
