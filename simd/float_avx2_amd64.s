#include "textflag.h"
#include "float_amd64.h"

// Float32 kernels for AVX2 + FMA3 (see kernels_amd64.go for prototypes).
//
// Pair kernels keep four 8-lane accumulators (32 floats per step) so the FMA
// latency is hidden, then finish with 8-wide steps and one masked step for
// the last n%8 elements. VMASKMOVPS neither reads nor faults on masked-off
// lanes, so no kernel touches memory past its slices.
//
// Batch kernels score 8 rows at a time with one accumulator per row and the
// query chunk loaded once per step, then reduce the 8 accumulators together
// with a VHADDPS tree (far cheaper than 8 separate horizontal sums, which
// dominate at small dimensions such as PQ sub-vectors). Leftover rows (n%8)
// go through the pair body.

// tailMask<>: 8 dwords of all-ones then 8 of zero. The 8 dwords starting at
// dword 8-r select the first r lanes.
DATA tailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tailMask<>+32(SB)/8, $0
DATA tailMask<>+40(SB)/8, $0
DATA tailMask<>+48(SB)/8, $0
DATA tailMask<>+56(SB)/8, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// LOADMASK sets Y to the tail mask for the low 3 bits of R (R is clobbered).
#define LOADMASK(R, Y) \
	ANDQ $7, R; \
	NEGQ R; \
	ADDQ $8, R; \
	LEAQ tailMask<>(SB), R13; \
	VMOVDQU (R13)(R*4), Y

#define ZERO4 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3

#define ZERO8 \
	ZERO4; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// L2ONE: in SI = a, DI = b, CX = n >= 1. Out: X0 = sum((a-b)^2); SI and DI
// advanced by n elements. Clobbers AX, CX, R13, Y0-Y7, Y11.
#define L2ONE \
	ZERO4; \
	CMPQ CX, $32; \
	JLT  l2one8; \
l2one32: \
	VMOVUPS     (SI), Y4; \
	VMOVUPS     32(SI), Y5; \
	VMOVUPS     64(SI), Y6; \
	VMOVUPS     96(SI), Y7; \
	VSUBPS      (DI), Y4, Y4; \
	VSUBPS      32(DI), Y5, Y5; \
	VSUBPS      64(DI), Y6, Y6; \
	VSUBPS      96(DI), Y7, Y7; \
	VFMADD231PS Y4, Y4, Y0; \
	VFMADD231PS Y5, Y5, Y1; \
	VFMADD231PS Y6, Y6, Y2; \
	VFMADD231PS Y7, Y7, Y3; \
	ADDQ        $128, SI; \
	ADDQ        $128, DI; \
	SUBQ        $32, CX; \
	CMPQ        CX, $32; \
	JGE         l2one32; \
l2one8: \
	CMPQ        CX, $8; \
	JLT         l2onetail; \
	VMOVUPS     (SI), Y4; \
	VSUBPS      (DI), Y4, Y4; \
	VFMADD231PS Y4, Y4, Y0; \
	ADDQ        $32, SI; \
	ADDQ        $32, DI; \
	SUBQ        $8, CX; \
	JMP         l2one8; \
l2onetail: \
	TESTQ       CX, CX; \
	JEQ         l2onesum; \
	LEAQ        (SI)(CX*4), SI; \
	LEAQ        (DI)(CX*4), DI; \
	MOVQ        CX, AX; \
	NEGQ        CX; \
	LOADMASK(AX, Y11); \
	VMASKMOVPS  (SI)(CX*4), Y11, Y4; \
	VMASKMOVPS  (DI)(CX*4), Y11, Y5; \
	VSUBPS      Y5, Y4, Y4; \
	VFMADD231PS Y4, Y4, Y1; \
l2onesum: \
	VADDPS      Y1, Y0, Y0; \
	VADDPS      Y3, Y2, Y2; \
	VADDPS      Y2, Y0, Y0; \
	HSUM8

// DOTONE: as L2ONE with sum(a*b).
#define DOTONE \
	ZERO4; \
	CMPQ CX, $32; \
	JLT  dotone8; \
dotone32: \
	VMOVUPS     (SI), Y4; \
	VMOVUPS     32(SI), Y5; \
	VMOVUPS     64(SI), Y6; \
	VMOVUPS     96(SI), Y7; \
	VFMADD231PS (DI), Y4, Y0; \
	VFMADD231PS 32(DI), Y5, Y1; \
	VFMADD231PS 64(DI), Y6, Y2; \
	VFMADD231PS 96(DI), Y7, Y3; \
	ADDQ        $128, SI; \
	ADDQ        $128, DI; \
	SUBQ        $32, CX; \
	CMPQ        CX, $32; \
	JGE         dotone32; \
dotone8: \
	CMPQ        CX, $8; \
	JLT         dotonetail; \
	VMOVUPS     (SI), Y4; \
	VFMADD231PS (DI), Y4, Y0; \
	ADDQ        $32, SI; \
	ADDQ        $32, DI; \
	SUBQ        $8, CX; \
	JMP         dotone8; \
dotonetail: \
	TESTQ       CX, CX; \
	JEQ         dotonesum; \
	LEAQ        (SI)(CX*4), SI; \
	LEAQ        (DI)(CX*4), DI; \
	MOVQ        CX, AX; \
	NEGQ        CX; \
	LOADMASK(AX, Y11); \
	VMASKMOVPS  (SI)(CX*4), Y11, Y4; \
	VMASKMOVPS  (DI)(CX*4), Y11, Y5; \
	VFMADD231PS Y5, Y4, Y1; \
dotonesum: \
	VADDPS      Y1, Y0, Y0; \
	VADDPS      Y3, Y2, Y2; \
	VADDPS      Y2, Y0, Y0; \
	HSUM8

// Batch register use: R8 = q, DI = current row, R9 = dim, DX = out cursor,
// BX = rows left, R10 = row stride in bytes, R11 = 3*stride, Y10 = tail mask
// for dim%8. In an 8-row block: SI walks q, R12 walks rows 0-3 (addressed
// as R12 + {0,1,2,3}*stride), R14 walks rows 4-7.
#define BATCHSETUP \
	MOVQ q+0(FP), R8; \
	MOVQ rows+8(FP), DI; \
	MOVQ dim+16(FP), R9; \
	MOVQ out+24(FP), DX; \
	MOVQ n+32(FP), BX; \
	MOVQ R9, AX; \
	LOADMASK(AX, Y10); \
	MOVQ R9, R10; \
	SHLQ $2, R10; \
	LEAQ (R10)(R10*2), R11

#define BLOCKSTART \
	MOVQ R8, SI; \
	MOVQ DI, R12; \
	LEAQ (DI)(R10*4), R14; \
	ZERO8; \
	MOVQ R9, CX; \
	SHRQ $3, CX

// L2 step for row at address A: Y0+r += (q - row)^2.
#define L2ROW(A, ACC) \
	VSUBPS      A, Y8, Y9; \
	VFMADD231PS Y9, Y9, ACC

#define L2ROWM(A, ACC) \
	VMASKMOVPS  A, Y10, Y9; \
	VSUBPS      Y9, Y8, Y9; \
	VFMADD231PS Y9, Y9, ACC

#define DOTROW(A, ACC) \
	VFMADD231PS A, Y8, ACC

#define DOTROWM(A, ACC) \
	VMASKMOVPS  A, Y10, Y9; \
	VFMADD231PS Y9, Y8, ACC

#define BLOCKEND \
	REDUCE8ROWS; \
	VMOVUPS Y1, (DX); \
	ADDQ    $32, DX; \
	LEAQ    (DI)(R10*8), DI; \
	SUBQ    $8, BX

// func l2SqAVX2(a, b *float32, n int) float32
TEXT ·l2SqAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	L2ONE
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	DOTONE
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func l2SqBatchAVX2(q, rows *float32, dim int, out *float32, n int)
TEXT ·l2SqBatchAVX2(SB), NOSPLIT, $0-40
	BATCHSETUP
	CMPQ BX, $8
	JLT  rest

block:
	BLOCKSTART
	JZ   blocktail

blockloop:
	VMOVUPS (SI), Y8
	ROWS8(L2ROW)
	ADDQ    $32, SI
	ADDQ    $32, R12
	ADDQ    $32, R14
	DECQ    CX
	JNZ     blockloop

blocktail:
	TESTQ      $7, R9
	JZ         blocksum
	VMASKMOVPS (SI), Y10, Y8
	ROWS8(L2ROWM)

blocksum:
	BLOCKEND
	CMPQ BX, $8
	JGE  block

rest:
	TESTQ BX, BX
	JZ    done

rowloop:
	MOVQ   R8, SI
	MOVQ   R9, CX
	L2ONE
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	DECQ   BX
	JNZ    rowloop

done:
	VZEROUPPER
	RET

// func dotBatchAVX2(q, rows *float32, dim int, out *float32, n int)
TEXT ·dotBatchAVX2(SB), NOSPLIT, $0-40
	BATCHSETUP
	CMPQ BX, $8
	JLT  rest

block:
	BLOCKSTART
	JZ   blocktail

blockloop:
	VMOVUPS (SI), Y8
	ROWS8(DOTROW)
	ADDQ    $32, SI
	ADDQ    $32, R12
	ADDQ    $32, R14
	DECQ    CX
	JNZ     blockloop

blocktail:
	TESTQ      $7, R9
	JZ         blocksum
	VMASKMOVPS (SI), Y10, Y8
	ROWS8(DOTROWM)

blocksum:
	BLOCKEND
	CMPQ BX, $8
	JGE  block

rest:
	TESTQ BX, BX
	JZ    done

rowloop:
	MOVQ   R8, SI
	MOVQ   R9, CX
	DOTONE
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	DECQ   BX
	JNZ    rowloop

done:
	VZEROUPPER
	RET
