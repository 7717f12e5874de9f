/* The C side of the luajit-* and lua54-* loaders: one lua_State and everything that touches it. Every
 * entry into Lua goes through lua_pcall (bb_open too), so a Lua error never longjmps through Go frames;
 * an error raised outside any pcall would reach the panic function, which aborts (it should not happen). */
#ifndef BB_BRIDGE_H
#define BB_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "lua.h"

/* Status of a bb_* call; bb_vm.out holds the result (BB_OK) or the message (anything else). */
enum {
	BB_OK = 0,
	BB_ERR = 1,        /* a Lua error (message with traceback) */
	BB_TIMEOUT = 2,    /* the deadline passed, the count hook raised an error */
	BB_MEM = 3,        /* Lua ran out of memory */
	BB_BADRESULT = 4,  /* the entry point returned something other than a string: out names its type */
	BB_NOENTRY = 5,    /* the script defines no function by the entry point's name */
	BB_NOSTATE = 6     /* luaL_newstate failed */
};

typedef struct bb_vm {
	lua_State *L;
	int64_t deadline_ns;   /* CLOCK_MONOTONIC; 0 while no call is running or without deadline */
	int hook_count;        /* instructions between deadline checks; 0: no hook */
	int timed_out;
	int noentry;           /* bb_load found no entry function */
	int entry_ref;         /* the script's entry function */
	int msgh_ref, load_ref, text_ref, table_ref; /* the message handler and the trampolines */
	const char *chunkname, *entry; /* bb_load's arguments, only during bb_load */
	const char *in;        /* the input of the running call (Go memory, only during the call) */
	size_t inlen;
	const char *out;       /* the result or message, valid until the next call on this state */
	size_t outlen;
} bb_vm;

/* bb_open makes a state with the standard libraries, package.cpath set to cpath and "json" preloaded as
 * lua-cjson. jit: LuaJIT only, 1 leaves the JIT compiler on (the count hook cannot stop compiled
 * code), 0 turns it off. hook_count 0: no deadline checks at all. Returns NULL only when no state could
 * be made; any other failure is reported in vm->out with a status in *status. */
bb_vm *bb_open(const char *cpath, size_t cpathlen, int jit, int hook_count, int *status);

/* bb_load runs the script's chunk (under the deadline) and keeps its global function `entry`. */
int bb_load(bb_vm *vm, const char *code, size_t len, const char *chunkname, const char *entry,
	    int64_t timeout_ns);

/* bb_call_text calls entry(input) with the input as a Lua string. */
int bb_call_text(bb_vm *vm, const char *in, size_t len, int64_t timeout_ns);

/* bb_call_table builds a Lua table from an encoded row (see encodeRow in vm.go) and calls entry(table). */
int bb_call_table(bb_vm *vm, const char *in, size_t len, int64_t timeout_ns);

void bb_close(bb_vm *vm);

#endif
