//go:build (luajit || lua54) && !(luajit && lua54)

/* See bridge.h. Compiled against LuaJIT (BB_LUAJIT defined, Lua 5.1 API) or Lua 5.4. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lauxlib.h"
#include "lualib.h"
#include "bridge.h"
#ifdef BB_LUAJIT
#include "luajit.h"
#endif

/* Rows nested deeper than this are refused (Go's encoder refuses them first). */
#define BB_MAX_DEPTH 200

static char bb_key; /* the registry key of the state's bb_vm */

static int64_t bb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bb_vm *bb_getvm(lua_State *L)
{
	bb_vm *vm;
	lua_pushlightuserdata(L, (void *)&bb_key);
	lua_rawget(L, LUA_REGISTRYINDEX);
	vm = (bb_vm *)lua_touserdata(L, -1);
	lua_pop(L, 1);
	return vm;
}

/* The count hook: every hook_count VM instructions, check the deadline. Past it, raise an error, and
 * from then on check at every instruction, so that a script that catches the error with pcall and
 * goes on is stopped at its next instruction outside that pcall. Compiled LuaJIT traces never call
 * hooks: see bb_init and doc.go. */
static void bb_hook(lua_State *L, lua_Debug *ar)
{
	bb_vm *vm;
	(void)ar;
	vm = bb_getvm(L);
	if (vm == NULL || vm->deadline_ns == 0 || bb_now_ns() < vm->deadline_ns)
		return;
	if (!vm->timed_out) {
		vm->timed_out = 1;
		lua_sethook(L, bb_hook, LUA_MASKCOUNT, 1);
		if (L != vm->L)
			lua_sethook(vm->L, bb_hook, LUA_MASKCOUNT, 1);
	}
	luaL_where(L, 0); /* level 0 in a hook: the function the hook interrupted */
	lua_pushliteral(L, "udf: deadline passed");
	lua_concat(L, 2);
	lua_error(L);
}

/* The message handler of every pcall: the message (or what the error object is) and a traceback. */
static int bb_msgh(lua_State *L)
{
	const char *msg;
	int t = lua_type(L, 1);
	if (t == LUA_TSTRING || t == LUA_TNUMBER)
		msg = lua_tostring(L, 1);
	else
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	luaL_traceback(L, L, msg, 1);
	return 1;
}

/* Protected: run the script's chunk and keep its global function vm->entry. */
static int bb_loader(lua_State *L)
{
	bb_vm *vm = (bb_vm *)lua_touserdata(L, lua_upvalueindex(1));
	if (luaL_loadbuffer(L, vm->in, vm->inlen, vm->chunkname) != 0)
		return lua_error(L);
	lua_call(L, 0, 0);
	lua_getglobal(L, vm->entry);
	if (lua_type(L, -1) != LUA_TFUNCTION) {
		vm->noentry = 1;
		return luaL_error(L, "the script defines no global function %s", vm->entry);
	}
	if (vm->entry_ref != LUA_NOREF)
		luaL_unref(L, LUA_REGISTRYINDEX, vm->entry_ref);
	vm->entry_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}

/* Protected: entry(input) with the input as a Lua string. */
static int bb_text(lua_State *L)
{
	bb_vm *vm = (bb_vm *)lua_touserdata(L, lua_upvalueindex(1));
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->entry_ref);
	lua_pushlstring(L, vm->in, vm->inlen);
	lua_call(L, 1, 1);
	return 1;
}

typedef struct {
	const unsigned char *p, *end;
} bb_reader;

static void bb_bad(lua_State *L)
{
	luaL_error(L, "udf: malformed row encoding");
}

static uint32_t bb_u32(lua_State *L, bb_reader *r)
{
	uint32_t v;
	if (r->end - r->p < 4)
		bb_bad(L);
	memcpy(&v, r->p, 4);
	r->p += 4;
	return v;
}

/* Push one value of the encoded row (format: encodeValue in vm.go). JSON null becomes a NULL light
 * userdata, which is cjson.null, so that json.encode writes null and object keys with null values
 * stay. */
static void bb_push_value(lua_State *L, bb_reader *r, int depth)
{
	uint32_t n, i, klen;
	double d;
	if (depth > BB_MAX_DEPTH)
		luaL_error(L, "udf: row nested deeper than %d", BB_MAX_DEPTH);
	luaL_checkstack(L, 3, "udf: row nested too deeply");
	if (r->p >= r->end)
		bb_bad(L);
	switch (*r->p++) {
	case 'N':
		lua_pushlightuserdata(L, NULL);
		break;
	case 'T':
		lua_pushboolean(L, 1);
		break;
	case 'F':
		lua_pushboolean(L, 0);
		break;
	case 'D':
		if (r->end - r->p < 8)
			bb_bad(L);
		memcpy(&d, r->p, 8);
		r->p += 8;
		lua_pushnumber(L, (lua_Number)d);
		break;
	case 'S':
		n = bb_u32(L, r);
		if ((size_t)(r->end - r->p) < n)
			bb_bad(L);
		lua_pushlstring(L, (const char *)r->p, n);
		r->p += n;
		break;
	case 'A':
		n = bb_u32(L, r);
		if ((size_t)(r->end - r->p) < n) /* every element takes at least one byte */
			bb_bad(L);
		lua_createtable(L, (int)n, 0);
		for (i = 1; i <= n; i++) {
			bb_push_value(L, r, depth + 1);
			lua_rawseti(L, -2, i);
		}
		break;
	case 'O':
		n = bb_u32(L, r);
		if ((size_t)(r->end - r->p) / 5 < n) /* every member takes at least five bytes */
			bb_bad(L);
		lua_createtable(L, 0, (int)n);
		for (i = 0; i < n; i++) {
			klen = bb_u32(L, r);
			if ((size_t)(r->end - r->p) < klen)
				bb_bad(L);
			lua_pushlstring(L, (const char *)r->p, klen);
			r->p += klen;
			bb_push_value(L, r, depth + 1);
			lua_rawset(L, -3);
		}
		break;
	default:
		bb_bad(L);
	}
}

/* Protected: entry(row) with the row built as a Lua table. */
static int bb_table(lua_State *L)
{
	bb_vm *vm = (bb_vm *)lua_touserdata(L, lua_upvalueindex(1));
	bb_reader r;
	r.p = (const unsigned char *)vm->in;
	r.end = r.p + vm->inlen;
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->entry_ref);
	bb_push_value(L, &r, 0);
	if (r.p != r.end)
		bb_bad(L);
	lua_call(L, 1, 1);
	return 1;
}

#ifdef BB_LUAJIT
static int bb_jit_refused(lua_State *L)
{
	return luaL_error(L, "udf: the JIT stays off while a deadline is in force "
			     "(UDF_TIMEOUT_MS=0 or UDF_LUAJIT_JIT=on turn it on)");
}
#endif

/* Protected: libraries, the vm in the registry, the trampolines, cpath and json. */
static int bb_init(lua_State *L)
{
	bb_vm *vm = (bb_vm *)lua_touserdata(L, 1);
	int jit = (int)lua_tointeger(L, 2);
	luaL_openlibs(L);
	lua_pushlightuserdata(L, (void *)&bb_key);
	lua_pushlightuserdata(L, vm);
	lua_rawset(L, LUA_REGISTRYINDEX);
	lua_pushcfunction(L, bb_msgh);
	vm->msgh_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_pushlightuserdata(L, vm);
	lua_pushcclosure(L, bb_loader, 1);
	vm->load_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_pushlightuserdata(L, vm);
	lua_pushcclosure(L, bb_text, 1);
	vm->text_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_pushlightuserdata(L, vm);
	lua_pushcclosure(L, bb_table, 1);
	vm->table_ref = luaL_ref(L, LUA_REGISTRYINDEX);

	lua_getglobal(L, "package");
	lua_pushlstring(L, vm->in, vm->inlen);
	lua_setfield(L, -2, "cpath");
	lua_getfield(L, -1, "loaded");
	lua_getglobal(L, "require");
	lua_pushliteral(L, "cjson");
	lua_call(L, 1, 1);
	lua_setfield(L, -2, "json");
	lua_pop(L, 2);
#ifdef BB_LUAJIT
	if (!jit) {
		luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
		lua_getglobal(L, "jit");
		if (lua_istable(L, -1)) {
			lua_pushcfunction(L, bb_jit_refused);
			lua_setfield(L, -2, "on");
		}
		lua_pop(L, 1);
	}
#else
	(void)jit;
#endif
	return 0;
}

static __thread jmp_buf *bb_panic_jmp;

/* Only reachable from bb_open's two unprotected pushes (an allocation failure in a new state). */
static int bb_panic(lua_State *L)
{
	if (bb_panic_jmp != NULL)
		longjmp(*bb_panic_jmp, 1);
	fprintf(stderr, "udf: unprotected Lua error: %s\n", lua_tostring(L, -1));
	abort();
	return 0;
}

static int bb_finish(bb_vm *vm, int rc, int want_string)
{
	lua_State *L = vm->L;
	int timed_out = vm->timed_out, noentry = vm->noentry;
	vm->in = NULL;
	vm->inlen = 0;
	vm->chunkname = vm->entry = NULL;
	vm->noentry = 0;
	vm->deadline_ns = 0;
	if (timed_out) {
		vm->timed_out = 0;
		lua_sethook(L, bb_hook, LUA_MASKCOUNT, vm->hook_count);
	}
	if (rc != 0 || timed_out) {
		if (lua_type(L, -1) == LUA_TSTRING) {
			vm->out = lua_tolstring(L, -1, &vm->outlen);
		} else {
			vm->out = "(no message)";
			vm->outlen = strlen(vm->out);
		}
		if (timed_out)
			return BB_TIMEOUT;
		if (rc == LUA_ERRMEM)
			return BB_MEM;
		return noentry ? BB_NOENTRY : BB_ERR;
	}
	if (!want_string) {
		vm->out = "";
		vm->outlen = 0;
		return BB_OK;
	}
	if (lua_type(L, -1) != LUA_TSTRING) {
		vm->out = luaL_typename(L, -1);
		vm->outlen = strlen(vm->out);
		return BB_BADRESULT;
	}
	vm->out = lua_tolstring(L, -1, &vm->outlen);
	return BB_OK;
}

static void bb_start(bb_vm *vm, const char *in, size_t len, int64_t timeout_ns)
{
	lua_settop(vm->L, 0);
	vm->in = in;
	vm->inlen = len;
	vm->timed_out = 0;
	vm->deadline_ns = (timeout_ns > 0 && vm->hook_count > 0) ? bb_now_ns() + timeout_ns : 0;
}

bb_vm *bb_open(const char *cpath, size_t cpathlen, int jit, int hook_count, int *status)
{
	jmp_buf jb;
	bb_vm *volatile vm; /* volatile: read after a longjmp back to the setjmp below */
	lua_State *L;
	int rc;

	*status = BB_NOSTATE;
	vm = (bb_vm *)calloc(1, sizeof *vm);
	if (vm == NULL)
		return NULL;
	L = luaL_newstate();
	if (L == NULL) {
		free(vm);
		return NULL;
	}
	vm->L = L;
	vm->entry_ref = LUA_NOREF;
	vm->hook_count = hook_count;
	lua_atpanic(L, bb_panic);
	bb_panic_jmp = &jb;
	if (setjmp(jb) != 0) {
		/* Out of memory in a new state. It is left unclosed: after a panic it may be inconsistent. */
		bb_panic_jmp = NULL;
		free(vm);
		return NULL;
	}
	lua_pushcfunction(L, bb_init);
	lua_pushlightuserdata(L, vm);
	bb_panic_jmp = NULL;
	lua_pushinteger(L, jit); /* no allocation: a pushed integer needs no memory */
	vm->in = cpath;
	vm->inlen = cpathlen;
	rc = lua_pcall(L, 2, 0, 0);
	*status = bb_finish(vm, rc, 0);
	if (*status == BB_OK && hook_count > 0)
		lua_sethook(L, bb_hook, LUA_MASKCOUNT, hook_count);
	return vm;
}

int bb_load(bb_vm *vm, const char *code, size_t len, const char *chunkname, const char *entry,
	    int64_t timeout_ns)
{
	lua_State *L = vm->L;
	bb_start(vm, code, len, timeout_ns);
	vm->chunkname = chunkname;
	vm->entry = entry;
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->msgh_ref);
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->load_ref);
	return bb_finish(vm, lua_pcall(L, 0, 0, 1), 0);
}

int bb_call_text(bb_vm *vm, const char *in, size_t len, int64_t timeout_ns)
{
	lua_State *L = vm->L;
	bb_start(vm, in, len, timeout_ns);
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->msgh_ref);
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->text_ref);
	return bb_finish(vm, lua_pcall(L, 0, 1, 1), 1);
}

int bb_call_table(bb_vm *vm, const char *in, size_t len, int64_t timeout_ns)
{
	lua_State *L = vm->L;
	bb_start(vm, in, len, timeout_ns);
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->msgh_ref);
	lua_rawgeti(L, LUA_REGISTRYINDEX, vm->table_ref);
	return bb_finish(vm, lua_pcall(L, 0, 1, 1), 1);
}

void bb_close(bb_vm *vm)
{
	if (vm == NULL)
		return;
	lua_close(vm->L);
	free(vm);
}
