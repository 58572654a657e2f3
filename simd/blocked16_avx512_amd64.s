#include "textflag.h"

// func dotBlocked8F16AVX512(q *float32, blocks *uint16, dim int, out *float32, nblocks int)
//
// dotBlocked8F16AVX2 (blocked16_avx2_amd64.s) two coordinates a step:
// block b holds rows 8b..8b+7 as [dim][8] halves, so the 32 bytes at
// coordinate pair (d, d+1) widen (VCVTPH2PS, exact) into one zmm whose
// low 8 lanes are coordinate d of the 8 rows and whose high 8 lanes are
// coordinate d+1. They are multiplied by [q_d ×8 | q_{d+1} ×8]; after the
// last pair each accumulator's halves are added (even coordinates' sum
// plus odd coordinates' sum), then an odd dim's last coordinate is added
// as the AVX2 kernel adds it. Half the loads and conversions of the AVX2
// kernel per coordinate; the sums are the same products in another order
// (DotBlockedF16's callers only rank by them).
//
// REQUIRES: dim >= 1, nblocks >= 1; blocks covers nblocks*dim*8 halves,
// q dim floats, out nblocks*8 floats.
TEXT ·dotBlocked8F16AVX512(SB), NOSPLIT, $0-40
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
	MOVQ R9, R15
	SHRQ $1, R15              // R15 = coordinate pairs

group:
	CMPQ   BX, $8
	JLT    single
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ   DX, SI
	MOVQ   R8, AX             // AX walks the coordinate pairs of block 0
	MOVQ   R15, CX
	TESTQ  CX, CX
	JZ     groupfold

groupd:
	VBROADCASTSS  (SI), Y8
	VBROADCASTSS  4(SI), Y9
	VINSERTF32X8  $1, Y9, Z8, Z8
	VCVTPH2PS     (AX), Z9
	VCVTPH2PS     (AX)(R10*1), Z10
	VCVTPH2PS     (AX)(R10*2), Z11
	VCVTPH2PS     (AX)(R11*1), Z12
	VFMADD231PS   Z9, Z8, Z0
	VFMADD231PS   Z10, Z8, Z1
	VFMADD231PS   Z11, Z8, Z2
	VFMADD231PS   Z12, Z8, Z3
	VCVTPH2PS     (AX)(R10*4), Z13
	VCVTPH2PS     (AX)(R12*1), Z14
	VCVTPH2PS     (AX)(R13*1), Z15
	VCVTPH2PS     (AX)(R14*1), Z16
	VFMADD231PS   Z13, Z8, Z4
	VFMADD231PS   Z14, Z8, Z5
	VFMADD231PS   Z15, Z8, Z6
	VFMADD231PS   Z16, Z8, Z7
	ADDQ          $8, SI
	ADDQ          $32, AX
	DECQ          CX
	JNZ           groupd

groupfold:
	VEXTRACTF32X8 $1, Z0, Y9
	VADDPS        Y9, Y0, Y0
	VEXTRACTF32X8 $1, Z1, Y9
	VADDPS        Y9, Y1, Y1
	VEXTRACTF32X8 $1, Z2, Y9
	VADDPS        Y9, Y2, Y2
	VEXTRACTF32X8 $1, Z3, Y9
	VADDPS        Y9, Y3, Y3
	VEXTRACTF32X8 $1, Z4, Y9
	VADDPS        Y9, Y4, Y4
	VEXTRACTF32X8 $1, Z5, Y9
	VADDPS        Y9, Y5, Y5
	VEXTRACTF32X8 $1, Z6, Y9
	VADDPS        Y9, Y6, Y6
	VEXTRACTF32X8 $1, Z7, Y9
	VADDPS        Y9, Y7, Y7
	TESTQ         $1, R9
	JZ            groupstore
	// The last coordinate of an odd dim.
	VBROADCASTSS  (SI), Y8
	VCVTPH2PS     (AX), Y9
	VCVTPH2PS     (AX)(R10*1), Y10
	VCVTPH2PS     (AX)(R10*2), Y11
	VCVTPH2PS     (AX)(R11*1), Y12
	VFMADD231PS   Y9, Y8, Y0
	VFMADD231PS   Y10, Y8, Y1
	VFMADD231PS   Y11, Y8, Y2
	VFMADD231PS   Y12, Y8, Y3
	VCVTPH2PS     (AX)(R10*4), Y9
	VCVTPH2PS     (AX)(R12*1), Y10
	VCVTPH2PS     (AX)(R13*1), Y11
	VCVTPH2PS     (AX)(R14*1), Y12
	VFMADD231PS   Y9, Y8, Y4
	VFMADD231PS   Y10, Y8, Y5
	VFMADD231PS   Y11, Y8, Y6
	VFMADD231PS   Y12, Y8, Y7

groupstore:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	LEAQ    (R8)(R10*8), R8   // the next group of 8 blocks
	SUBQ    $8, BX
	JMP     group

single:
	TESTQ BX, BX
	JZ    done

singleb:
	VXORPS Z0, Z0, Z0
	MOVQ   DX, SI
	MOVQ   R8, AX
	MOVQ   R15, CX
	TESTQ  CX, CX
	JZ     singlefold

singled:
	VBROADCASTSS  (SI), Y8
	VBROADCASTSS  4(SI), Y9
	VINSERTF32X8  $1, Y9, Z8, Z8
	VCVTPH2PS     (AX), Z9
	VFMADD231PS   Z9, Z8, Z0
	ADDQ          $8, SI
	ADDQ          $32, AX
	DECQ          CX
	JNZ           singled

singlefold:
	VEXTRACTF32X8 $1, Z0, Y9
	VADDPS        Y9, Y0, Y0
	TESTQ         $1, R9
	JZ            singlestore
	VBROADCASTSS  (SI), Y8
	VCVTPH2PS     (AX), Y9
	VFMADD231PS   Y9, Y8, Y0

singlestore:
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    R10, R8
	DECQ    BX
	JNZ     singleb

done:
	VZEROUPPER
	RET
