#include "textflag.h"

// func scoreMask16AVX2(sums *uint16, terms *uint16, scale float32, offset float32, tscale float32, bound float32, masks *uint32, nblocks int)
//
// ScoreMask16 over nblocks whole blocks of 32 scores: each 8 sums and each
// 8 terms are widened to int32 (VPMOVZXWD) and converted exactly to
// float32 (VCVTDQ2PS), then d = (s·scale) + offset and d += t·tscale are
// formed one rounded operation at a time, in the reference's order (no
// fused multiply-add: the term's product is rounded before it is added),
// and compared below bound (VCMPPS LT_OS: false for NaN, as Go's <). The
// four 8-bit VMOVMSKPS results make the block's 32-bit mask. REQUIRES:
// nblocks >= 1; sums and terms each cover nblocks*32 uint16s, masks
// nblocks uint32s.
TEXT ·scoreMask16AVX2(SB), NOSPLIT, $0-48
	MOVQ         sums+0(FP), SI
	MOVQ         terms+8(FP), DX
	VBROADCASTSS scale+16(FP), Y12
	VBROADCASTSS offset+20(FP), Y13
	VBROADCASTSS tscale+24(FP), Y14
	VBROADCASTSS bound+28(FP), Y15
	MOVQ         masks+32(FP), DI
	MOVQ         nblocks+40(FP), CX

block:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPMOVZXWD (DX), Y4
	VPMOVZXWD 16(DX), Y5
	VPMOVZXWD 32(DX), Y6
	VPMOVZXWD 48(DX), Y7
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS    Y12, Y0, Y0
	VMULPS    Y12, Y1, Y1
	VMULPS    Y12, Y2, Y2
	VMULPS    Y12, Y3, Y3
	VMULPS    Y14, Y4, Y4
	VMULPS    Y14, Y5, Y5
	VMULPS    Y14, Y6, Y6
	VMULPS    Y14, Y7, Y7
	VADDPS    Y13, Y0, Y0
	VADDPS    Y13, Y1, Y1
	VADDPS    Y13, Y2, Y2
	VADDPS    Y13, Y3, Y3
	VADDPS    Y4, Y0, Y0
	VADDPS    Y5, Y1, Y1
	VADDPS    Y6, Y2, Y2
	VADDPS    Y7, Y3, Y3
	VCMPPS    $1, Y15, Y0, Y0
	VCMPPS    $1, Y15, Y1, Y1
	VCMPPS    $1, Y15, Y2, Y2
	VCMPPS    $1, Y15, Y3, Y3
	VMOVMSKPS Y0, AX
	VMOVMSKPS Y1, BX
	SHLL      $8, BX
	ORL       BX, AX
	VMOVMSKPS Y2, BX
	SHLL      $16, BX
	ORL       BX, AX
	VMOVMSKPS Y3, BX
	SHLL      $24, BX
	ORL       BX, AX
	MOVL      AX, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DX
	ADDQ      $4, DI
	DECQ      CX
	JNZ       block

	VZEROUPPER
	RET
