#include "textflag.h"

// func callgrindRequest(args *[6]uint64) uint64
// Valgrind's client request on amd64: its special instruction preamble (four rotations of DI that leave it
// as it was), then XCHGQ BX, BX; the request's arguments are at AX, the answer comes back in DX (0 when
// not running under valgrind, where the sequence does nothing).
TEXT ·callgrindRequest(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	MOVQ $0, DX
	ROLQ $3, DI
	ROLQ $13, DI
	ROLQ $61, DI
	ROLQ $51, DI
	XCHGQ BX, BX
	MOVQ DX, ret+8(FP)
	RET
