// Macros shared by the amd64 float kernels.

// HSUM8 reduces Y0 to its lane sum in X0 (clobbers Y1).
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0

// REDUCE8ROWS turns accumulators Y0..Y7 (one per row) into Y1 = the 8 row
// sums in order.
#define REDUCE8ROWS \
	VHADDPS    Y1, Y0, Y0; \
	VHADDPS    Y3, Y2, Y2; \
	VHADDPS    Y5, Y4, Y4; \
	VHADDPS    Y7, Y6, Y6; \
	VHADDPS    Y2, Y0, Y0; \
	VHADDPS    Y6, Y4, Y4; \
	VPERM2F128 $0x20, Y4, Y0, Y1; \
	VPERM2F128 $0x31, Y4, Y0, Y2; \
	VADDPS     Y2, Y1, Y1

#define ROWS8(OP) \
	OP((R12), Y0); \
	OP((R12)(R10*1), Y1); \
	OP((R12)(R10*2), Y2); \
	OP((R12)(R11*1), Y3); \
	OP((R14), Y4); \
	OP((R14)(R10*1), Y5); \
	OP((R14)(R10*2), Y6); \
	OP((R14)(R11*1), Y7)


// ROWS8Z is ROWS8 for 512-bit accumulators Z0..Z7.
#define ROWS8Z(OP) \
	OP((R12), Z0); \
	OP((R12)(R10*1), Z1); \
	OP((R12)(R10*2), Z2); \
	OP((R12)(R11*1), Z3); \
	OP((R14), Z4); \
	OP((R14)(R10*1), Z5); \
	OP((R14)(R10*2), Z6); \
	OP((R14)(R11*1), Z7)
