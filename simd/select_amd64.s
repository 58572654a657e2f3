#include "textflag.h"

// The coarse step's kernels and the 4-bit table's quantization (select.go
// gives each one's Go reference, which these match bit for bit: the same
// float32 operations, each rounded, in the same order where it matters).

// func coarseDistAVX2(dst, norm, dot *float32, qq, unscale float32, n int)
//
// dst[i] = (qq + norm[i]) - (unscale * dot[i]), 8 at a time.
// REQUIRES: n >= 8, a multiple of 8.
TEXT ·coarseDistAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         norm+8(FP), SI
	MOVQ         dot+16(FP), DX
	VBROADCASTSS qq+24(FP), Y8
	VBROADCASTSS unscale+28(FP), Y9
	MOVQ         n+32(FP), CX

cdloop:
	VADDPS  (SI), Y8, Y0
	VMULPS  (DX), Y9, Y1
	VSUBPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     cdloop
	VZEROUPPER
	RET

// func minBitsAVX2(reps *int32, v *float32, n int)
//
// reps[i] = min(reps[i], bits(v[i])) as signed integers, 8 at a time.
// REQUIRES: n >= 8, a multiple of 8.
TEXT ·minBitsAVX2(SB), NOSPLIT, $0-24
	MOVQ reps+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX

mbloop:
	VMOVDQU (DI), Y0
	VPMINSD (SI), Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     mbloop
	VZEROUPPER
	RET

// func maskLEAVX2(v *float32, b float32, masks *uint32, nblocks int)
//
// masks[j] bit i = v[32j+i] <= b (ordered, signalling: false for NaN),
// 32 floats a word.
// REQUIRES: nblocks >= 1.
TEXT ·maskLEAVX2(SB), NOSPLIT, $0-32
	MOVQ         v+0(FP), SI
	VBROADCASTSS b+8(FP), Y8
	MOVQ         masks+16(FP), DI
	MOVQ         nblocks+24(FP), CX

mlloop:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	VCMPPS    $2, Y8, Y0, Y0 // v <= b
	VCMPPS    $2, Y8, Y1, Y1
	VCMPPS    $2, Y8, Y2, Y2
	VCMPPS    $2, Y8, Y3, Y3
	VMOVMSKPS Y0, AX
	VMOVMSKPS Y1, BX
	VMOVMSKPS Y2, R8
	VMOVMSKPS Y3, R9
	SHLL      $8, BX
	SHLL      $16, R8
	SHLL      $24, R9
	ORL       BX, AX
	ORL       R8, AX
	ORL       R9, AX
	MOVL      AX, (DI)
	ADDQ      $128, SI
	ADDQ      $4, DI
	DECQ      CX
	JNZ       mlloop
	VZEROUPPER
	RET

// func lut4RowsAVX2(lut *float32, m int, mins *float32) (maxRange, offset float32)
//
// QuantizeLUT4's first pass: each row's minimum to mins[s], offset the sum
// of the minimums in row order, maxRange the largest hi − lo (starting from
// 0). VMINPS and VMAXPS agree with the reference's comparisons when no
// value is NaN (signed zeros aside, which change no byte and no sum).
// REQUIRES: m >= 1.
TEXT ·lut4RowsAVX2(SB), NOSPLIT, $0-32
	MOVQ   lut+0(FP), SI
	MOVQ   m+8(FP), CX
	MOVQ   mins+16(FP), DI
	VXORPS X10, X10, X10 // offset
	VXORPS X11, X11, X11 // maxRange

rowloop:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMINPS       Y1, Y0, Y2
	VMAXPS       Y1, Y0, Y3
	VEXTRACTF128 $1, Y2, X4
	VEXTRACTF128 $1, Y3, X5
	VMINPS       X4, X2, X2
	VMAXPS       X5, X3, X3
	VMOVHLPS     X2, X2, X4
	VMOVHLPS     X3, X3, X5
	VMINPS       X4, X2, X2
	VMAXPS       X5, X3, X3
	VMOVSHDUP    X2, X4
	VMOVSHDUP    X3, X5
	VMINSS       X4, X2, X2  // lo
	VMAXSS       X5, X3, X3  // hi
	VMOVSS       X2, (DI)
	VADDSS       X2, X10, X10
	VSUBSS       X2, X3, X3  // hi - lo
	VMAXSS       X3, X11, X11
	ADDQ         $64, SI
	ADDQ         $4, DI
	DECQ         CX
	JNZ          rowloop
	VMOVSS       X11, maxRange+24(FP)
	VMOVSS       X10, offset+28(FP)
	VZEROUPPER
	RET

// 0.5, lut4BytesAVX2's rounding term.
DATA half<>+0(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $4

// func lut4BytesAVX2(lut *float32, m int, mins *float32, scale float32, q *byte)
//
// QuantizeLUT4's second pass: q = trunc(float32((v − lo)·scale) + 0.5),
// sixteen a row. The conversion truncates as Go's does; the values are in
// [0, 256), so the saturating packs change none.
// REQUIRES: m >= 1.
TEXT ·lut4BytesAVX2(SB), NOSPLIT, $0-40
	MOVQ         lut+0(FP), SI
	MOVQ         m+8(FP), CX
	MOVQ         mins+16(FP), DX
	VBROADCASTSS scale+24(FP), Y8
	MOVQ         q+32(FP), DI
	VBROADCASTSS half<>(SB), Y9 // 0.5, from memory (fastscan_amd64.s says why)

byteloop:
	VBROADCASTSS (DX), Y2
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VSUBPS       Y2, Y0, Y0
	VSUBPS       Y2, Y1, Y1
	VMULPS       Y8, Y0, Y0
	VMULPS       Y8, Y1, Y1
	VADDPS       Y9, Y0, Y0
	VADDPS       Y9, Y1, Y1
	VCVTTPS2DQ   Y0, Y0
	VCVTTPS2DQ   Y1, Y1
	VPACKSSDW    Y1, Y0, Y0 // words 0-3, 8-11 | 4-7, 12-15
	VPERMQ       $0xD8, Y0, Y0 // words 0-15 in order
	VEXTRACTI128 $1, Y0, X1
	VPACKUSWB    X1, X0, X0
	VMOVDQU      X0, (DI)
	ADDQ         $64, SI
	ADDQ         $4, DX
	ADDQ         $16, DI
	DECQ         CX
	JNZ          byteloop
	VZEROUPPER
	RET

// func partitionBelowAVX2(score *float32, row *uint32, n int, lim int32, tmpS *float32, tmpR *uint32) int
//
// PartitionBelow over n scores (a multiple of 8), 8 at a time: each
// vector's order keys (b ^ ((b >> 31) >>> 1)) are compared with lim, and
// VPERMD by compressPerm packs the lanes below lim to the front of one
// copy of the scores and rows and the others to the front of another.
// The first copy is stored at the next below slot in score and row
// themselves: that slot is never past the vector just loaded, so the
// store overwrites nothing unread. The second goes to tmpS and tmpR, which
// the caller copies back after the scores below. Returns the count below.
// REQUIRES: n > 0, a multiple of 8; POPCNT (every AVX2 processor has it).
// PACK permutes the scores (Y0) and rows (Y1) by compressPerm[M], which
// brings the lanes whose bit is set in mask M to the front, and stores
// them at S[I] and R[I]. Clobbers M, Y4-Y6.
#define PACK(M, S, R, I) \
	SHLQ    $5, M; \
	VMOVDQU (R10)(M*1), Y4; \
	VPERMD  Y0, Y4, Y5; \
	VPERMD  Y1, Y4, Y6; \
	VMOVUPS Y5, (S)(I*4); \
	VMOVDQU Y6, (R)(I*4)

TEXT ·partitionBelowAVX2(SB), NOSPLIT, $0-56
	MOVQ         score+0(FP), SI
	MOVQ         row+8(FP), DI
	MOVQ         n+16(FP), CX
	MOVL         lim+24(FP), R11
	VMOVD        R11, X8
	VPBROADCASTD X8, Y8
	MOVQ         tmpS+32(FP), R8
	MOVQ         tmpR+40(FP), R9
	LEAQ         ·compressPerm(SB), R10
	XORQ         AX, AX // the vector's first element
	XORQ         BX, BX // scores below lim so far
	XORQ         DX, DX // the others so far

pbloop:
	VMOVUPS   (SI)(AX*4), Y0
	VMOVDQU   (DI)(AX*4), Y1
	VPSRAD    $31, Y0, Y2
	VPSRLD    $1, Y2, Y2
	VPXOR     Y0, Y2, Y2  // the order keys
	VPCMPGTD  Y2, Y8, Y3  // lim > key
	VMOVMSKPS Y3, R11
	POPCNTL   R11, R13
	MOVQ      R11, R12
	PACK(R12, SI, DI, BX) // the lanes below lim, at the next below slot
	XORQ      $0xff, R11
	PACK(R11, R8, R9, DX) // the others, into the scratch
	ADDQ      R13, BX
	ADDQ      $8, DX
	SUBQ      R13, DX
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       pbloop
	MOVQ      BX, ret+48(FP)
	VZEROUPPER
	RET
