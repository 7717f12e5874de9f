// The C side of the lua54capi mechanism (see lua54capi.go).
#ifndef PLUGINCALL_LUA54CAPI_H
#define PLUGINCALL_LUA54CAPI_H

#include <stddef.h>
#include <stdint.h>
#include <lua.h>

typedef struct {
	lua_State *L;
	int int_ref, bytes_ref; // registry references of the two Lua functions
} pc_lua;

// pc_open makes the state, registers the C functions and compiles the Lua wrappers. It returns NULL
// with *err set (a static message) when it fails.
pc_lua *pc_open(const char **err);
void pc_close(pc_lua *p);

// A result: status LUA_OK and a value, or an error status with the message on the stack (pc_error).
// Returned by value so that the Go caller passes no pointer to a result variable (which would escape
// to the heap: an allocation per call).
typedef struct {
	int64_t value;
	int status;
} pc_result;

// pc_int calls the int wrapper on x; the value is the result.
pc_result pc_int(pc_lua *p, int64_t x);

// pc_bytes calls the bytes wrapper on the n bytes at in and copies the resulting string into out (room
// for cap bytes; no more than cap are copied); the value is the result's length (which may exceed cap).
pc_result pc_bytes(pc_lua *p, const uint8_t *in, size_t n, uint8_t *out, size_t cap);

// pc_error copies the error message on top of the stack into buf (NUL-terminated) and pops it.
void pc_error(pc_lua *p, char *buf, size_t cap);

#endif
