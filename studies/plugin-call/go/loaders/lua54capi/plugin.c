// The C side of the lua54capi mechanism: the contract's functions as C functions registered in a Lua
// 5.4 state, called from tiny Lua functions. Every call into Lua is a lua_pcall, so a Lua error
// unwinds (longjmp) only through C frames and never through Go's.
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include <lualib.h>
#include "plugin.h"

// c_int(x) is contract.IntFunc. Go's int64 arithmetic wraps; C's signed overflow does not, so compute
// in unsigned.
static int c_int(lua_State *L) {
	uint64_t x = (uint64_t)luaL_checkinteger(L, 1);
	lua_pushinteger(L, (lua_Integer)((x * 2654435761u + 12345u) & 0xffffffffu));
	return 1;
}

// c_bytes(s) is contract.BytesFunc: s reversed, each byte XOR 0x5a, into a new Lua string.
static int c_bytes(lua_State *L) {
	size_t n;
	const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
	luaL_Buffer b;
	unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, n);
	for (size_t i = 0; i < n; i++) {
		out[n - 1 - i] = in[i] ^ 0x5a;
	}
	luaL_pushresultsize(&b, n);
	return 1;
}

// The wrappers: Lua functions calling the C functions, which the chunk receives as arguments (so the
// wrappers reach them as upvalues, not through globals).
static const char wrappers[] =
	"local c_int, c_bytes = ...\n"
	"return function(x) return c_int(x) end, function(s) return c_bytes(s) end\n";

pc_lua *pc_open(const char **err) {
	lua_State *L = luaL_newstate();
	if (L == NULL) {
		*err = "luaL_newstate failed (out of memory)";
		return NULL;
	}
	if (luaL_loadbufferx(L, wrappers, sizeof wrappers - 1, "=wrappers", "t") != LUA_OK) {
		*err = "compiling the Lua wrappers failed";
		lua_close(L);
		return NULL;
	}
	lua_pushcfunction(L, c_int);
	lua_pushcfunction(L, c_bytes);
	if (lua_pcall(L, 2, 2, 0) != LUA_OK) {
		*err = "running the Lua wrappers' chunk failed";
		lua_close(L);
		return NULL;
	}
	pc_lua *p = (pc_lua *)malloc(sizeof *p);
	if (p == NULL) {
		*err = "malloc failed";
		lua_close(L);
		return NULL;
	}
	p->L = L;
	p->bytes_ref = luaL_ref(L, LUA_REGISTRYINDEX); // pops the second result
	p->int_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return p;
}

void pc_close(pc_lua *p) {
	lua_close(p->L);
	free(p);
}

pc_result pc_int(pc_lua *p, int64_t x) {
	pc_result r = {0, LUA_OK};
	lua_State *L = p->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, p->int_ref);
	lua_pushinteger(L, (lua_Integer)x);
	if ((r.status = lua_pcall(L, 1, 1, 0)) != LUA_OK) {
		return r;
	}
	int isnum = 0;
	r.value = (int64_t)lua_tointegerx(L, -1, &isnum);
	lua_pop(L, 1);
	if (!isnum) {
		lua_pushliteral(L, "the int wrapper returned no integer");
		r.status = LUA_ERRRUN;
	}
	return r;
}

pc_result pc_bytes(pc_lua *p, const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
	pc_result r = {0, LUA_OK};
	lua_State *L = p->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, p->bytes_ref);
	lua_pushlstring(L, (const char *)in, n);
	if ((r.status = lua_pcall(L, 1, 1, 0)) != LUA_OK) {
		return r;
	}
	if (lua_type(L, -1) != LUA_TSTRING) {
		lua_pop(L, 1);
		lua_pushliteral(L, "the bytes wrapper returned no string");
		r.status = LUA_ERRRUN;
		return r;
	}
	size_t m;
	const char *s = lua_tolstring(L, -1, &m);
	memcpy(out, s, m < cap ? m : cap);
	r.value = (int64_t)m;
	lua_pop(L, 1);
	return r;
}

void pc_error(pc_lua *p, char *buf, size_t cap) {
	size_t m = 0;
	const char *s = lua_tolstring(p->L, -1, &m);
	if (s == NULL) {
		s = "(an error that is not a string)";
		m = strlen(s);
	}
	if (cap > 0) {
		if (m >= cap) {
			m = cap - 1;
		}
		memcpy(buf, s, m);
		buf[m] = 0;
	}
	lua_pop(p->L, 1);
}
