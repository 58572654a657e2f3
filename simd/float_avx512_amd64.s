#include "textflag.h"
#include "float_amd64.h"

// Float32 kernels for AVX-512F (see kernels_amd64.go for prototypes). Same
// structure as the AVX2 file with 16-lane registers; tails use a zeroing
// opmask load (K1 selects the first n%16 lanes), which suppresses faults and
// reads nothing on masked-off lanes.

// TAILK sets K1 to select the first CX&15 lanes. Clobbers AX, CX.
#define TAILK \
	ANDQ  $15, CX; \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX; \
	KMOVW AX, K1

#define ZERO4Z \
	VXORPS Z0, Z0, Z0; \
	VXORPS Z1, Z1, Z1; \
	VXORPS Z2, Z2, Z2; \
	VXORPS Z3, Z3, Z3

#define ZERO8Z \
	ZERO4Z; \
	VXORPS Z4, Z4, Z4; \
	VXORPS Z5, Z5, Z5; \
	VXORPS Z6, Z6, Z6; \
	VXORPS Z7, Z7, Z7

// FOLD4Z adds Z0..Z3 and reduces the 16 lanes to X0.
#define FOLD4Z \
	VADDPS        Z1, Z0, Z0; \
	VADDPS        Z3, Z2, Z2; \
	VADDPS        Z2, Z0, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS        Y1, Y0, Y0; \
	HSUM8

// L2ONEZ: in SI = a, DI = b, CX = n >= 1. Out: X0 = sum((a-b)^2); SI and DI
// advanced by n elements. Clobbers AX, CX, K1, Z0-Z7.
#define L2ONEZ \
	ZERO4Z; \
	CMPQ CX, $64; \
	JLT  l2z16; \
l2z64: \
	VMOVUPS     (SI), Z4; \
	VMOVUPS     64(SI), Z5; \
	VMOVUPS     128(SI), Z6; \
	VMOVUPS     192(SI), Z7; \
	VSUBPS      (DI), Z4, Z4; \
	VSUBPS      64(DI), Z5, Z5; \
	VSUBPS      128(DI), Z6, Z6; \
	VSUBPS      192(DI), Z7, Z7; \
	VFMADD231PS Z4, Z4, Z0; \
	VFMADD231PS Z5, Z5, Z1; \
	VFMADD231PS Z6, Z6, Z2; \
	VFMADD231PS Z7, Z7, Z3; \
	ADDQ        $256, SI; \
	ADDQ        $256, DI; \
	SUBQ        $64, CX; \
	CMPQ        CX, $64; \
	JGE         l2z64; \
l2z16: \
	CMPQ        CX, $16; \
	JLT         l2ztail; \
	VMOVUPS     (SI), Z4; \
	VSUBPS      (DI), Z4, Z4; \
	VFMADD231PS Z4, Z4, Z0; \
	ADDQ        $64, SI; \
	ADDQ        $64, DI; \
	SUBQ        $16, CX; \
	JMP         l2z16; \
l2ztail: \
	TESTQ       CX, CX; \
	JEQ         l2zsum; \
	MOVQ        CX, DX; \
	TAILK; \
	VMOVUPS.Z   (SI), K1, Z4; \
	VMOVUPS.Z   (DI), K1, Z5; \
	VSUBPS      Z5, Z4, Z4; \
	VFMADD231PS Z4, Z4, Z1; \
	LEAQ        (SI)(DX*4), SI; \
	LEAQ        (DI)(DX*4), DI; \
l2zsum: \
	FOLD4Z

// DOTONEZ: as L2ONEZ with sum(a*b).
#define DOTONEZ \
	ZERO4Z; \
	CMPQ CX, $64; \
	JLT  dotz16; \
dotz64: \
	VMOVUPS     (SI), Z4; \
	VMOVUPS     64(SI), Z5; \
	VMOVUPS     128(SI), Z6; \
	VMOVUPS     192(SI), Z7; \
	VFMADD231PS (DI), Z4, Z0; \
	VFMADD231PS 64(DI), Z5, Z1; \
	VFMADD231PS 128(DI), Z6, Z2; \
	VFMADD231PS 192(DI), Z7, Z3; \
	ADDQ        $256, SI; \
	ADDQ        $256, DI; \
	SUBQ        $64, CX; \
	CMPQ        CX, $64; \
	JGE         dotz64; \
dotz16: \
	CMPQ        CX, $16; \
	JLT         dotztail; \
	VMOVUPS     (SI), Z4; \
	VFMADD231PS (DI), Z4, Z0; \
	ADDQ        $64, SI; \
	ADDQ        $64, DI; \
	SUBQ        $16, CX; \
	JMP         dotz16; \
dotztail: \
	TESTQ       CX, CX; \
	JEQ         dotzsum; \
	MOVQ        CX, DX; \
	TAILK; \
	VMOVUPS.Z   (SI), K1, Z4; \
	VMOVUPS.Z   (DI), K1, Z5; \
	VFMADD231PS Z5, Z4, Z1; \
	LEAQ        (SI)(DX*4), SI; \
	LEAQ        (DI)(DX*4), DI; \
dotzsum: \
	FOLD4Z

// Batch register use as in the AVX2 file, with K2 = tail mask for dim%16.
// The out cursor lives in R13 because the pair bodies use DX as scratch.
#define BATCHSETUPZ \
	MOVQ  q+0(FP), R8; \
	MOVQ  rows+8(FP), DI; \
	MOVQ  dim+16(FP), R9; \
	MOVQ  out+24(FP), R13; \
	MOVQ  n+32(FP), BX; \
	MOVQ  R9, CX; \
	TAILK; \
	KMOVW K1, K2; \
	MOVQ  R9, R10; \
	SHLQ  $2, R10; \
	LEAQ  (R10)(R10*2), R11

#define BLOCKSTARTZ \
	MOVQ R8, SI; \
	MOVQ DI, R12; \
	LEAQ (DI)(R10*4), R14; \
	ZERO8Z; \
	MOVQ R9, CX; \
	SHRQ $4, CX

#define L2ROWZ(A, ACC) \
	VSUBPS      A, Z8, Z9; \
	VFMADD231PS Z9, Z9, ACC

#define L2ROWZM(A, ACC) \
	VMOVUPS.Z   A, K2, Z9; \
	VSUBPS      Z9, Z8, Z9; \
	VFMADD231PS Z9, Z9, ACC

#define DOTROWZ(A, ACC) \
	VFMADD231PS A, Z8, ACC

#define DOTROWZM(A, ACC) \
	VMOVUPS.Z   A, K2, Z9; \
	VFMADD231PS Z9, Z8, ACC

// FOLDZ8 halves Z0..Z7 into Y0..Y7.
#define FOLDZ8 \
	VEXTRACTF64X4 $1, Z0, Y8; \
	VADDPS        Y8, Y0, Y0; \
	VEXTRACTF64X4 $1, Z1, Y8; \
	VADDPS        Y8, Y1, Y1; \
	VEXTRACTF64X4 $1, Z2, Y8; \
	VADDPS        Y8, Y2, Y2; \
	VEXTRACTF64X4 $1, Z3, Y8; \
	VADDPS        Y8, Y3, Y3; \
	VEXTRACTF64X4 $1, Z4, Y8; \
	VADDPS        Y8, Y4, Y4; \
	VEXTRACTF64X4 $1, Z5, Y8; \
	VADDPS        Y8, Y5, Y5; \
	VEXTRACTF64X4 $1, Z6, Y8; \
	VADDPS        Y8, Y6, Y6; \
	VEXTRACTF64X4 $1, Z7, Y8; \
	VADDPS        Y8, Y7, Y7

#define BLOCKENDZ \
	FOLDZ8; \
	REDUCE8ROWS; \
	VMOVUPS Y1, (R13); \
	ADDQ    $32, R13; \
	LEAQ    (DI)(R10*8), DI; \
	SUBQ    $8, BX

// func l2SqAVX512(a, b *float32, n int) float32
TEXT ·l2SqAVX512(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	L2ONEZ
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotAVX512(a, b *float32, n int) float32
TEXT ·dotAVX512(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	DOTONEZ
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func l2SqBatchAVX512(q, rows *float32, dim int, out *float32, n int)
TEXT ·l2SqBatchAVX512(SB), NOSPLIT, $0-40
	BATCHSETUPZ
	CMPQ BX, $8
	JLT  rest

block:
	BLOCKSTARTZ
	JZ   blocktail

blockloop:
	VMOVUPS (SI), Z8
	ROWS8Z(L2ROWZ)
	ADDQ    $64, SI
	ADDQ    $64, R12
	ADDQ    $64, R14
	DECQ    CX
	JNZ     blockloop

blocktail:
	TESTQ     $15, R9
	JZ        blocksum
	VMOVUPS.Z (SI), K2, Z8
	ROWS8Z(L2ROWZM)

blocksum:
	BLOCKENDZ
	CMPQ BX, $8
	JGE  block

rest:
	TESTQ BX, BX
	JZ    done

rowloop:
	MOVQ   R8, SI
	MOVQ   R9, CX
	L2ONEZ
	VMOVSS X0, (R13)
	ADDQ   $4, R13
	DECQ   BX
	JNZ    rowloop

done:
	VZEROUPPER
	RET

// func dotBatchAVX512(q, rows *float32, dim int, out *float32, n int)
TEXT ·dotBatchAVX512(SB), NOSPLIT, $0-40
	BATCHSETUPZ
	CMPQ BX, $8
	JLT  rest

block:
	BLOCKSTARTZ
	JZ   blocktail

blockloop:
	VMOVUPS (SI), Z8
	ROWS8Z(DOTROWZ)
	ADDQ    $64, SI
	ADDQ    $64, R12
	ADDQ    $64, R14
	DECQ    CX
	JNZ     blockloop

blocktail:
	TESTQ     $15, R9
	JZ        blocksum
	VMOVUPS.Z (SI), K2, Z8
	ROWS8Z(DOTROWZM)

blocksum:
	BLOCKENDZ
	CMPQ BX, $8
	JGE  block

rest:
	TESTQ BX, BX
	JZ    done

rowloop:
	MOVQ   R8, SI
	MOVQ   R9, CX
	DOTONEZ
	VMOVSS X0, (R13)
	ADDQ   $4, R13
	DECQ   BX
	JNZ    rowloop

done:
	VZEROUPPER
	RET
