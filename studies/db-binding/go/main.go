// The go-cgo mechanism: count the first PARAM nodes of ^BCAT("lvd",*) and sum their subscripts from Go,
// one GT.M call-in per node (next^bbci) through cgo, timed by bridgebench's Go probe. gtm_ci is variadic,
// which cgo cannot call, so a small C function calls it. Build with CGO_CFLAGS=-I$gtm_dist and
// CGO_LDFLAGS="-L$gtm_dist -lgtmshr -Wl,-rpath,$gtm_dist" (the study's build step sets them).
package main

/*
#include <stdlib.h>
#include <string.h>
#include "gtmxc_types.h"

static int bb_next(char *out, char *prev) { return (int)gtm_ci("next", out, prev); }

static void bb_zstatus(char *msg, int len) { gtm_zstatus(msg, len); }
*/
import "C"

import (
	"fmt"
	"strconv"
	"unsafe"

	"bridgebench/probe"
)

func gtmError(what string, status C.int) error {
	msg := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(msg))
	C.bb_zstatus(msg, 512)
	return fmt.Errorf("%s failed (%d): %s", what, int(status), C.GoString(msg))
}

func setup(param string) (probe.Op, func(), error) {
	limit, err := strconv.Atoi(param)
	if err != nil || limit < 1 {
		return nil, nil, fmt.Errorf("PARAM must be a positive number of nodes, got %q", param)
	}
	if status := C.gtm_init(); status != 0 {
		return nil, nil, gtmError("gtm_init", C.int(status))
	}
	out := (*C.char)(C.malloc(256))
	prev := (*C.char)(C.malloc(256))
	op := func() (string, error) {
		*prev = 0
		count, sum := 0, int64(0)
		for count < limit {
			if status := C.bb_next(out, prev); status != 0 {
				return "", gtmError("gtm_ci(next)", status)
			}
			if *out == 0 {
				break
			}
			sub := C.GoString(out)
			n, err := strconv.ParseInt(sub, 10, 64)
			if err != nil {
				return "", fmt.Errorf("subscript %q is not a number", sub)
			}
			count++
			sum += n
			C.strcpy(prev, out)
		}
		return fmt.Sprintf("%d %d", count, sum), nil
	}
	cleanup := func() {
		C.gtm_exit()
		C.free(unsafe.Pointer(out))
		C.free(unsafe.Pointer(prev))
	}
	return op, cleanup, nil
}

func main() { probe.Main(setup) }
