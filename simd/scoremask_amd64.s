#include "textflag.h"

// func scoreMaskAVX2(sums *uint16, terms *float32, scale float32, offset float32, bound float32, masks *uint32, nblocks int)
//
// ScoreMask over nblocks whole blocks of 32 scores: each 8 sums are
// widened to int32 (VPMOVZXWD), converted exactly to float32, then
// ((s·scale) + offset) + term is formed one rounded operation at a time, as
// the reference does (no fused multiply-add), and compared below bound
// (VCMPPS LT_OS: false for NaN, as Go's <). The four 8-bit VMOVMSKPS
// results make the block's 32-bit mask. REQUIRES: nblocks >= 1; sums
// covers nblocks*32 uint16s, terms nblocks*32 floats, masks nblocks uint32s.
TEXT ·scoreMaskAVX2(SB), NOSPLIT, $0-48
	MOVQ         sums+0(FP), SI
	MOVQ         terms+8(FP), DX
	VBROADCASTSS scale+16(FP), Y13
	VBROADCASTSS offset+20(FP), Y14
	VBROADCASTSS bound+24(FP), Y15
	MOVQ         masks+32(FP), DI
	MOVQ         nblocks+40(FP), CX

block:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS    Y13, Y0, Y0
	VMULPS    Y13, Y1, Y1
	VMULPS    Y13, Y2, Y2
	VMULPS    Y13, Y3, Y3
	VADDPS    Y14, Y0, Y0
	VADDPS    Y14, Y1, Y1
	VADDPS    Y14, Y2, Y2
	VADDPS    Y14, Y3, Y3
	VADDPS    (DX), Y0, Y0
	VADDPS    32(DX), Y1, Y1
	VADDPS    64(DX), Y2, Y2
	VADDPS    96(DX), Y3, Y3
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
	ADDQ      $128, DX
	ADDQ      $4, DI
	DECQ      CX
	JNZ       block

	VZEROUPPER
	RET
