#include "textflag.h"

// 4-bit fast-scan block kernels (layout in doc.go; prototypes in
// kernels_amd64.go).
//
// For each group of 32 code bytes, the low and high nibbles index two
// 16-entry byte tables with VPSHUFB, giving 32 8-bit partial scores each.
// Scores are summed in 16-bit words without unpacking: a word holds vectors
// 2w (low byte) and 2w+1 (high byte), so adding whole words accumulates
// even + 256*odd, while a second accumulator adds the words shifted right by
// 8 (the odd scores alone). At the end even = all - (odd << 8), exact modulo
// 2^16, and M <= 256 keeps every true sum below 2^16. Low- and high-nibble
// scores use separate accumulators to halve the dependency chains.
//
// Final ordering: VPUNPCKL/HWD of (even, odd) give per 128-bit lane vectors
// {0-7 | 16-23} and {8-15 | 24-31}; VPERM2I128 puts them in order for the
// sums, and the threshold compare packs the unpermuted pair, whose
// VPACKSSWB output is already in vector order.

// FINISH: in Y0/Y1 = lo/hi word accumulators, Y2/Y3 = odd accumulators.
// Out: Y4 = vectors {0-7 | 16-23}, Y5 = {8-15 | 24-31}. Clobbers Y0-Y3.
#define FINISH \
	VPADDW     Y1, Y0, Y0; \
	VPADDW     Y3, Y2, Y2; \
	VPSLLW     $8, Y2, Y1; \
	VPSUBW     Y1, Y0, Y0; \
	VPUNPCKLWD Y2, Y0, Y4; \
	VPUNPCKHWD Y2, Y0, Y5

// GROUP256 scores one group at (SI) with LUT rows at (R10), 16(R10) into
// Y0..Y3. Needs Y15 = 0x0f bytes. Clobbers Y4-Y7.
#define GROUP256 \
	VMOVDQU        (SI), Y4; \
	VPSRLW         $4, Y4, Y5; \
	VPAND          Y15, Y4, Y4; \
	VPAND          Y15, Y5, Y5; \
	VBROADCASTI128 (R10), Y6; \
	VBROADCASTI128 16(R10), Y7; \
	VPSHUFB        Y4, Y6, Y6; \
	VPSHUFB        Y5, Y7, Y7; \
	VPADDW         Y6, Y0, Y0; \
	VPADDW         Y7, Y1, Y1; \
	VPSRLW         $8, Y6, Y6; \
	VPSRLW         $8, Y7, Y7; \
	VPADDW         Y6, Y2, Y2; \
	VPADDW         Y7, Y3, Y3

// The kernels' constants. They are broadcast from memory rather than
// moved in from a general register: MOVD/MOVQ into an X register is a
// legacy-SSE instruction, and one that runs while a Y register's upper half
// holds data (after the first VPBROADCAST of a kernel) cost about 110 ns on
// the Zen 3 dev VM, each time (simd/BENCH.md, "SSE after AVX"). The AVX2
// kernels use no legacy-SSE instruction (TestNoLegacySSE).
DATA signWords<>+0(SB)/4, $0x80008000
GLOBL signWords<>(SB), RODATA|NOPTR, $4
DATA lowNibbles<>+0(SB)/4, $0x0f0f0f0f
GLOBL lowNibbles<>(SB), RODATA|NOPTR, $4

// func fastScan4AVX2(codes *byte, groups int, lut *byte, thresh uint16, sums *uint16, masks *uint32, nblocks int)
TEXT ·fastScan4AVX2(SB), NOSPLIT, $0-56
	MOVQ    codes+0(FP), SI
	MOVQ    groups+8(FP), R9
	MOVQ    lut+16(FP), R8
	MOVQ    sums+32(FP), DI
	MOVQ    masks+40(FP), DX
	MOVQ    nblocks+48(FP), BX

	// Y14 = thresh ^ 0x8000 and Y13 = 0x8000 in every word: flipping the
	// sign bit turns the unsigned compare into VPCMPGTW's signed one.
	VPBROADCASTD signWords<>(SB), Y13
	VPBROADCASTW thresh+24(FP), Y14
	VPXOR        Y13, Y14, Y14
	VPBROADCASTD lowNibbles<>(SB), Y15

block:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  R8, R10
	MOVQ  R9, CX

group:
	GROUP256
	ADDQ $32, SI
	ADDQ $32, R10
	DECQ CX
	JNZ  group

	FINISH
	VPERM2I128 $0x20, Y5, Y4, Y6
	VPERM2I128 $0x31, Y5, Y4, Y7
	VMOVDQU    Y6, (DI)
	VMOVDQU    Y7, 32(DI)
	VPXOR      Y13, Y4, Y4
	VPXOR      Y13, Y5, Y5
	VPCMPGTW   Y4, Y14, Y4
	VPCMPGTW   Y5, Y14, Y5
	VPACKSSWB  Y5, Y4, Y4
	VPMOVMSKB  Y4, AX
	MOVL       AX, (DX)
	ADDQ       $64, DI
	ADDQ       $4, DX
	DECQ       BX
	JNZ        block

	VZEROUPPER
	RET

// func fastScan4AVX512(codes *byte, groups int, lut *byte, thresh uint16, sums *uint16, masks *uint32, nblocks int)
//
// Two groups per 512-bit step: the 64 code bytes of groups p and p+1 are
// contiguous, and the 64 LUT bytes of rows 2p..2p+3 are too; VSHUFI64X2
// spreads them into [row 2p, 2p, 2p+2, 2p+2] (low nibbles) and
// [2p+1, 2p+1, 2p+3, 2p+3] (high nibbles). Upper and lower 256-bit halves
// are then folded, an odd last group is done at 256 bits, and the 32 sums
// are compared with VPCMPUW straight into a 32-bit opmask.
TEXT ·fastScan4AVX512(SB), NOSPLIT, $0-56
	MOVQ    codes+0(FP), SI
	MOVQ    groups+8(FP), R9
	MOVQ    lut+16(FP), R8
	MOVWLZX thresh+24(FP), AX
	MOVQ    sums+32(FP), DI
	MOVQ    masks+40(FP), DX
	MOVQ    nblocks+48(FP), BX

	VPBROADCASTW AX, Z14
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVQ         R9, R11
	SHRQ         $1, R11    // group pairs

blockz:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   R8, R10
	MOVQ   R11, CX
	TESTQ  CX, CX
	JZ     foldz

pairz:
	VMOVDQU64  (SI), Z4
	VMOVDQU64  (R10), Z8
	VSHUFI64X2 $0xa0, Z8, Z8, Z6
	VSHUFI64X2 $0xf5, Z8, Z8, Z7
	VPSRLW     $4, Z4, Z5
	VPANDD     Z15, Z4, Z4
	VPANDD     Z15, Z5, Z5
	VPSHUFB    Z4, Z6, Z6
	VPSHUFB    Z5, Z7, Z7
	VPADDW     Z6, Z0, Z0
	VPADDW     Z7, Z1, Z1
	VPSRLW     $8, Z6, Z6
	VPSRLW     $8, Z7, Z7
	VPADDW     Z6, Z2, Z2
	VPADDW     Z7, Z3, Z3
	ADDQ       $64, SI
	ADDQ       $64, R10
	DECQ       CX
	JNZ        pairz

foldz:
	VEXTRACTI64X4 $1, Z0, Y4
	VPADDW        Y4, Y0, Y0
	VEXTRACTI64X4 $1, Z1, Y4
	VPADDW        Y4, Y1, Y1
	VEXTRACTI64X4 $1, Z2, Y4
	VPADDW        Y4, Y2, Y2
	VEXTRACTI64X4 $1, Z3, Y4
	VPADDW        Y4, Y3, Y3
	TESTQ         $1, R9
	JZ            finishz
	GROUP256
	ADDQ          $32, SI

finishz:
	FINISH
	VPERM2I128    $0x20, Y5, Y4, Y6
	VPERM2I128    $0x31, Y5, Y4, Y7
	VINSERTI64X4  $1, Y7, Z6, Z6
	VMOVDQU64     Z6, (DI)
	VPCMPUW       $1, Z14, Z6, K1
	KMOVD         K1, AX
	MOVL          AX, (DX)
	ADDQ          $64, DI
	ADDQ          $4, DX
	DECQ          BX
	JNZ           blockz

	VZEROUPPER
	RET
