#include "textflag.h"

// Multi-query 4-bit fast-scan kernels: FastScan4 for 2, 3 or 4 queries over
// the same codes (FAISS's query-batched fast scan). Each group of 32 code
// bytes is loaded and split into nibbles once (Y12 low, Y13 high) and then
// looked up in every query's two 16-entry tables, so a query costs two
// table loads, two VPSHUFB, four word adds and two shifts a group instead
// of the single-query kernel's fourteen instructions. The sums are the
// single-query kernel's (fastscan_amd64.s explains the even/odd word
// trick), with one word accumulator and one odd accumulator a query:
// Y(2q) and Y(2q+1). Adding the low- and high-nibble scores into the same
// accumulator is exact modulo 2^16 like the rest.
//
// Arguments come in a fastScanMultiArgs (fastscan_multi_amd64.go), whose
// layout the offsets below follow: lut [4]*byte at 0, sums [4]*uint16 at
// 32, masks [4]*uint32 at 64, thresh [4]uint64 at 96 (each already XORed
// with 0x8000 for the signed compare).
//
// Registers: SI codes, R9 groups, AX args, BX nblocks, DI block number,
// R10 table offset within the group loop, CX loop count (and the mask
// bits at the end of a block), DX and R14 scratch, R8/R11/R12/R13 the
// queries' tables. Y15 = 0x0f bytes, Y14 = 0x8000 words.

// ENTER loads the arguments and the first two queries' tables (the 3- and
// 4-query kernels load R12 and R13 after it).
#define ENTER \
	MOVQ codes+0(FP), SI; \
	MOVQ groups+8(FP), R9; \
	MOVQ args+16(FP), AX; \
	MOVQ nblocks+24(FP), BX; \
	MOVQ 0(AX), R8; \
	MOVQ 8(AX), R11

// CONSTS sets Y14 = 0x8000 words, Y15 = 0x0f bytes, and DI (the block) to 0.
// (From memory, as fastScan4AVX2's: fastscan_amd64.s says why.)
#define CONSTS \
	VPBROADCASTD multiSignWords<>(SB), Y14; \
	VPBROADCASTD multiLowNibbles<>(SB), Y15; \
	XORQ         DI, DI

DATA multiSignWords<>+0(SB)/4, $0x80008000
GLOBL multiSignWords<>(SB), RODATA|NOPTR, $4
DATA multiLowNibbles<>+0(SB)/4, $0x0f0f0f0f
GLOBL multiLowNibbles<>(SB), RODATA|NOPTR, $4

// NIBBLES loads the group of 32 code bytes at (SI) and splits it into its
// low (Y12) and high (Y13) nibbles, once for every query.
#define NIBBLES \
	VMOVDQU (SI), Y12; \
	VPSRLW  $4, Y12, Y13; \
	VPAND   Y15, Y12, Y12; \
	VPAND   Y15, Y13, Y13

// NEXTGROUP steps to the next group's codes and tables and counts it down
// (the caller's JNZ closes the loop).
#define NEXTGROUP \
	ADDQ $32, SI; \
	ADDQ $32, R10; \
	DECQ CX

// SUMSOFFSET sets R14 = DI*64, the byte offset of block DI's sums.
#define SUMSOFFSET \
	MOVQ DI, R14; \
	SHLQ $6, R14

// QUERY scores the nibbles in Y12/Y13 with the table at (R)(R10*1) into
// accumulators A (all) and O (odd), using T and U as temporaries.
#define QUERY(R, A, O, T, U) \
	VBROADCASTI128 (R)(R10*1), T; \
	VBROADCASTI128 16(R)(R10*1), U; \
	VPSHUFB        Y12, T, T; \
	VPSHUFB        Y13, U, U; \
	VPADDW         T, A, A; \
	VPADDW         U, A, A; \
	VPSRLW         $8, T, T; \
	VPSRLW         $8, U, U; \
	VPADDW         T, O, O; \
	VPADDW         U, O, O

// STORE writes query q's sums (accumulators A and O) for block DI (R14 =
// DI*64, its sums' byte offset) and its mask. Clobbers A, O, Y8-Y11, CX, DX.
#define STORE(q, A, O) \
	VPSLLW         $8, O, Y8; \
	VPSUBW         Y8, A, A; \
	VPUNPCKLWD     O, A, Y8; \
	VPUNPCKHWD     O, A, Y9; \
	VPERM2I128     $0x20, Y9, Y8, Y10; \
	VPERM2I128     $0x31, Y9, Y8, Y11; \
	MOVQ           (32+8*q)(AX), DX; \
	VMOVDQU        Y10, (DX)(R14*1); \
	VMOVDQU        Y11, 32(DX)(R14*1); \
	VPBROADCASTW   (96+8*q)(AX), Y10; \
	VPXOR          Y14, Y8, Y8; \
	VPXOR          Y14, Y9, Y9; \
	VPCMPGTW       Y8, Y10, Y8; \
	VPCMPGTW       Y9, Y10, Y9; \
	VPACKSSWB      Y9, Y8, Y8; \
	VPMOVMSKB      Y8, CX; \
	MOVQ           (64+8*q)(AX), DX; \
	MOVL           CX, (DX)(DI*4)


// func fastScan4x2AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)
TEXT ·fastScan4x2AVX2(SB), NOSPLIT, $0-32
	ENTER
	CONSTS

block2:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  R10, R10
	MOVQ  R9, CX

group2:
	NIBBLES
	QUERY(R8, Y0, Y1, Y8, Y9)
	QUERY(R11, Y2, Y3, Y10, Y11)
	NEXTGROUP
	JNZ     group2

	SUMSOFFSET
	STORE(0, Y0, Y1)
	STORE(1, Y2, Y3)
	INCQ DI
	CMPQ DI, BX
	JNE  block2

	VZEROUPPER
	RET


// func fastScan4x3AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)
TEXT ·fastScan4x3AVX2(SB), NOSPLIT, $0-32
	ENTER
	MOVQ 16(AX), R12
	CONSTS

block3:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	XORQ  R10, R10
	MOVQ  R9, CX

group3:
	NIBBLES
	QUERY(R8, Y0, Y1, Y8, Y9)
	QUERY(R11, Y2, Y3, Y10, Y11)
	QUERY(R12, Y4, Y5, Y8, Y9)
	NEXTGROUP
	JNZ     group3

	SUMSOFFSET
	STORE(0, Y0, Y1)
	STORE(1, Y2, Y3)
	STORE(2, Y4, Y5)
	INCQ DI
	CMPQ DI, BX
	JNE  block3

	VZEROUPPER
	RET


// func fastScan4x4AVX2(codes *byte, groups int, args *fastScanMultiArgs, nblocks int)
TEXT ·fastScan4x4AVX2(SB), NOSPLIT, $0-32
	ENTER
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	CONSTS

block4:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	XORQ  R10, R10
	MOVQ  R9, CX

group4:
	NIBBLES
	QUERY(R8, Y0, Y1, Y8, Y9)
	QUERY(R11, Y2, Y3, Y10, Y11)
	QUERY(R12, Y4, Y5, Y8, Y9)
	QUERY(R13, Y6, Y7, Y10, Y11)
	NEXTGROUP
	JNZ     group4

	SUMSOFFSET
	STORE(0, Y0, Y1)
	STORE(1, Y2, Y3)
	STORE(2, Y4, Y5)
	STORE(3, Y6, Y7)
	INCQ DI
	CMPQ DI, BX
	JNE  block4

	VZEROUPPER
	RET
