#include "textflag.h"

// func dotBlocked8F16AVX2(q *float32, blocks *uint16, dim int, out *float32, nblocks int)
//
// dotBlocked8AVX2 (blocked_avx2_amd64.s) over half-precision rows: block b
// holds rows 8b..8b+7 as [dim][8] halves, so one 128-bit load widened by
// VCVTPH2PS (F16C, exact) is the same coordinate of 8 rows as floats. The
// loop, accumulators and summation order are dotBlocked8AVX2's; only the
// loads differ (16 bytes a block and coordinate instead of 32).
//
// REQUIRES: dim >= 1, nblocks >= 1; blocks covers nblocks*dim*8 halves,
// q dim floats, out nblocks*8 floats.
TEXT ·dotBlocked8F16AVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), DX
	MOVQ blocks+8(FP), R8
	MOVQ dim+16(FP), R9
	MOVQ out+24(FP), DI
	MOVQ nblocks+32(FP), BX
	MOVQ R9, R10
	SHLQ $4, R10              // R10 = one block's bytes (dim*8 halves)
	LEAQ (R10)(R10*2), R11    // 3 blocks
	LEAQ (R10)(R10*4), R12    // 5 blocks
	LEAQ (R11)(R11*1), R13    // 6 blocks
	LEAQ (R12)(R10*2), R14    // 7 blocks

group:
	CMPQ   BX, $8
	JLT    single
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   DX, SI
	MOVQ   R9, CX

groupd:
	VBROADCASTSS (SI), Y8
	VCVTPH2PS    (R8), Y9
	VCVTPH2PS    (R8)(R10*1), Y10
	VCVTPH2PS    (R8)(R10*2), Y11
	VCVTPH2PS    (R8)(R11*1), Y12
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	VFMADD231PS  Y11, Y8, Y2
	VFMADD231PS  Y12, Y8, Y3
	VCVTPH2PS    (R8)(R10*4), Y9
	VCVTPH2PS    (R8)(R12*1), Y10
	VCVTPH2PS    (R8)(R13*1), Y11
	VCVTPH2PS    (R8)(R14*1), Y12
	VFMADD231PS  Y9, Y8, Y4
	VFMADD231PS  Y10, Y8, Y5
	VFMADD231PS  Y11, Y8, Y6
	VFMADD231PS  Y12, Y8, Y7
	ADDQ         $4, SI
	ADDQ         $16, R8
	DECQ         CX
	JNZ          groupd

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	ADDQ    R14, R8           // R8 is at block 1 now; skip to block 8
	SUBQ    $8, BX
	JMP     group

single:
	TESTQ BX, BX
	JZ    done

singleb:
	VXORPS Y0, Y0, Y0
	MOVQ   DX, SI
	MOVQ   R9, CX

singled:
	VBROADCASTSS (SI), Y8
	VCVTPH2PS    (R8), Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         $4, SI
	ADDQ         $16, R8
	DECQ         CX
	JNZ          singled

	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    BX
	JNZ     singleb

done:
	VZEROUPPER
	RET
