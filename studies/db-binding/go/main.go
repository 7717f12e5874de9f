// The go-cgo mechanism: the benchmark's operation from Go, one GT.M call-in per node through cgo, timed by
// bridgebench's Go probe. PARAM is "OP N", OP one of traverse (next^bbci per node), get (get^bbci per
// node), set (clear^bbci, set^bbci per node, tally^bbci). gtm_ci is variadic, which cgo cannot call, so
// small C functions call it. Build with CGO_CFLAGS=-I$gtm_dist and
// CGO_LDFLAGS="-L$gtm_dist -lgtmshr -Wl,-rpath,$gtm_dist" (the study's build step sets them).
package main

/*
#include <stdlib.h>
#include <string.h>
#include "gtmxc_types.h"

#define VALUE_BYTES (1 << 20)

static int bb_next(char *out, char *prev) { return (int)gtm_ci("next", out, prev); }
static int bb_get(char *sub, char *value, long *length) {
	gtm_string_t out = {VALUE_BYTES, value};
	int status = (int)gtm_ci("get", sub, &out);
	*length = out.length;
	return status;
}
static int bb_set(char *sub, char *value) { return (int)gtm_ci("set", sub, value); }
static int bb_clear(void) { return (int)gtm_ci("clear"); }
static int bb_tally(char *out) { return (int)gtm_ci("tally", out); }
static void bb_zstatus(char *msg, int len) { gtm_zstatus(msg, len); }
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"bridgebench/probe"
)

func gtmError(what string, status C.int) error {
	msg := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(msg))
	C.bb_zstatus(msg, 512)
	return fmt.Errorf("%s failed (%d): %s", what, int(status), C.GoString(msg))
}

// buffers are C memory the call-ins write into, allocated once.
type buffers struct {
	out, prev, sub, value *C.char
}

func (b *buffers) traverse(limit int) (string, error) {
	*b.prev = 0
	count, sum := 0, int64(0)
	for count < limit {
		if status := C.bb_next(b.out, b.prev); status != 0 {
			return "", gtmError("gtm_ci(next)", status)
		}
		if *b.out == 0 {
			break
		}
		sub := C.GoString(b.out)
		n, err := strconv.ParseInt(sub, 10, 64)
		if err != nil {
			return "", fmt.Errorf("subscript %q is not a number", sub)
		}
		count++
		sum += n
		C.strcpy(b.prev, b.out)
	}
	return fmt.Sprintf("%d %d", count, sum), nil
}

// cString writes s into the C buffer dst (at most 255 bytes, NUL-terminated).
func cString(dst *C.char, s string) {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(dst)), 256)
	n := copy(buf[:255], s)
	buf[n] = 0
}

func (b *buffers) get(limit int) (string, error) {
	sum := int64(0)
	var length C.long
	for i := 1; i <= limit; i++ {
		cString(b.sub, strconv.Itoa(i))
		if status := C.bb_get(b.sub, b.value, &length); status != 0 {
			return "", gtmError("gtm_ci(get)", status)
		}
		v := C.GoStringN(b.value, C.int(length))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("value %q is not a number", v)
		}
		sum += n
	}
	return fmt.Sprintf("%d %d", limit, sum), nil
}

func (b *buffers) set(limit int) (string, error) {
	if status := C.bb_clear(); status != 0 {
		return "", gtmError("gtm_ci(clear)", status)
	}
	for i := 1; i <= limit; i++ {
		cString(b.sub, strconv.Itoa(i))
		if status := C.bb_set(b.sub, b.sub); status != 0 {
			return "", gtmError("gtm_ci(set)", status)
		}
	}
	if status := C.bb_tally(b.out); status != 0 {
		return "", gtmError("gtm_ci(tally)", status)
	}
	return C.GoString(b.out), nil
}

func setup(param string) (probe.Op, func(), error) {
	fields := strings.Fields(param)
	if len(fields) != 2 {
		return nil, nil, fmt.Errorf("PARAM must be \"OP N\", got %q", param)
	}
	limit, err := strconv.Atoi(fields[1])
	if err != nil || limit < 1 {
		return nil, nil, fmt.Errorf("N must be a positive number of nodes, got %q", fields[1])
	}
	b := &buffers{out: (*C.char)(C.malloc(256)), prev: (*C.char)(C.malloc(256)), sub: (*C.char)(C.malloc(256)),
		value: (*C.char)(C.malloc(C.VALUE_BYTES))}
	operations := map[string]func(int) (string, error){"traverse": b.traverse, "get": b.get, "set": b.set}
	run, ok := operations[fields[0]]
	if !ok {
		return nil, nil, fmt.Errorf("OP must be traverse, get or set, got %q", fields[0])
	}
	if status := C.gtm_init(); status != 0 {
		return nil, nil, gtmError("gtm_init", C.int(status))
	}
	op := func() (string, error) { return run(limit) }
	cleanup := func() {
		C.gtm_exit()
		for _, p := range []*C.char{b.out, b.prev, b.sub, b.value} {
			C.free(unsafe.Pointer(p))
		}
	}
	return op, cleanup, nil
}

func main() { probe.Main(setup) }
