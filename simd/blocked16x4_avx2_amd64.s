#include "textflag.h"

// func dotBlocked4QF16AVX2(q *float32, dim int, blocks *uint16, nblocks int, out *float32, ostride int)
//
// DotBlockedF16 for four queries at once (DotBlockedF16Multi): q holds
// them back to back (4·dim floats), and query j's scores of block b go to
// out + j·ostride bytes + b·32. Each half-precision coordinate of a block,
// widened once by VCVTPH2PS, is multiplied into the four queries'
// accumulators, so the centroids are read once per four queries instead
// of once per query. Two blocks at a time: 8 accumulators (Y0–Y7), the two
// widened rows (Y8, Y9) and the broadcast query values (Y10, Y11).
//
// Each row's sum is dotBlocked8F16AVX2's: one VFMADD231PS per coordinate,
// in coordinate order, into an accumulator that starts at zero, so every
// score is bit for bit what DotBlockedF16 gives for that query alone.
//
// REQUIRES: dim >= 1, nblocks >= 1; blocks covers nblocks*dim*8 halves,
// q 4*dim floats, out 3*ostride + nblocks*32 bytes.
TEXT ·dotBlocked4QF16AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DX
	MOVQ dim+8(FP), R9
	MOVQ blocks+16(FP), R8
	MOVQ nblocks+24(FP), BX
	MOVQ out+32(FP), DI
	MOVQ ostride+40(FP), R14  // bytes from one query's scores to the next's
	MOVQ R9, R10
	SHLQ $4, R10              // R10 = one block's bytes (dim*8 halves)
	MOVQ R9, R11
	SHLQ $2, R11              // R11 = one query's bytes (dim floats)
	LEAQ (R11)(R11*2), R12    // 3 queries
	LEAQ (R14)(R14*2), R13    // 3 output rows

pair:
	CMPQ   BX, $2
	JLT    one
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, SI
	MOVQ   R8, AX
	MOVQ   R9, CX

paird:
	VCVTPH2PS    (AX), Y8
	VCVTPH2PS    (AX)(R10*1), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (SI)(R11*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (SI)(R11*2), Y10
	VFMADD231PS  Y8, Y10, Y4
	VFMADD231PS  Y9, Y10, Y5
	VBROADCASTSS (SI)(R12*1), Y11
	VFMADD231PS  Y8, Y11, Y6
	VFMADD231PS  Y9, Y11, Y7
	ADDQ         $4, SI
	ADDQ         $16, AX
	DECQ         CX
	JNZ          paird

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R14*1)
	VMOVUPS Y3, 32(DI)(R14*1)
	VMOVUPS Y4, (DI)(R14*2)
	VMOVUPS Y5, 32(DI)(R14*2)
	VMOVUPS Y6, (DI)(R13*1)
	VMOVUPS Y7, 32(DI)(R13*1)
	ADDQ    $64, DI
	LEAQ    (R8)(R10*2), R8
	SUBQ    $2, BX
	JMP     pair

one:
	TESTQ  BX, BX
	JZ     done
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	MOVQ   DX, SI
	MOVQ   R8, AX
	MOVQ   R9, CX

oned:
	VCVTPH2PS    (AX), Y8
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VBROADCASTSS (SI)(R11*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VBROADCASTSS (SI)(R11*2), Y10
	VFMADD231PS  Y8, Y10, Y4
	VBROADCASTSS (SI)(R12*1), Y11
	VFMADD231PS  Y8, Y11, Y6
	ADDQ         $4, SI
	ADDQ         $16, AX
	DECQ         CX
	JNZ          oned

	VMOVUPS Y0, (DI)
	VMOVUPS Y2, (DI)(R14*1)
	VMOVUPS Y4, (DI)(R14*2)
	VMOVUPS Y6, (DI)(R13*1)

done:
	VZEROUPPER
	RET
