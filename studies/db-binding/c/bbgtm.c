/* A Lua module over GT.M's call-ins, in the three binding styles of making-lua-yottadb-fast.txt. It builds
 * unchanged against Lua 5.4 and LuaJIT (the Lua 5.1 API).
 *   bbgtm.node_next(subs)   naive: subs is a Lua table {global, sub1, sub2}; every subscript is checked
 *                           (again: the Lua side checked it too) and the reference ^G("s1","s2") is rebuilt
 *                           on every call, as lua-yottadb v1 did; returns the next last subscript or "".
 *   bbgtm.cache(g, s1)      cached: a userdata holding the prepared global and first subscript and a kept
 *   c:next(x)               call-in handle (gtm_cip); only the last subscript crosses on each call.
 *   c:batch(x, n)           batched: up to n following subscripts in one call-in, comma-separated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtmxc_types.h"
#include "lauxlib.h"
#include "lua.h"

#define SUB_MAX 256
#define BATCH_BYTES (1 << 20)

static void fail(lua_State *L, const char *what, gtm_status_t status) {
    char msg[512];
    gtm_zstatus(msg, sizeof msg);
    luaL_error(L, "%s failed (%d): %s", what, (int)status, msg);
}

static int initialised = 0;

static void ensure_init(lua_State *L) {
    if (!initialised) {
        gtm_status_t status = gtm_init();
        if (status != 0) fail(L, "gtm_init", status);
        initialised = 1;
    }
}

/* naive ---------------------------------------------------------------------------------------------- */
static int node_next(lua_State *L) {
    char ref[4 * SUB_MAX + 64], out[SUB_MAX];
    size_t used = 0;
    int n;
    ensure_init(L);
    luaL_checktype(L, 1, LUA_TTABLE);
#if LUA_VERSION_NUM >= 502
    n = (int)lua_rawlen(L, 1);
#else
    n = (int)lua_objlen(L, 1);
#endif
    if (n < 2) return luaL_error(L, "node_next: need a global and at least one subscript");
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s;
        lua_rawgeti(L, 1, i);
        if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "node_next: subscript %d is not a string", i);
        s = lua_tolstring(L, -1, &len);
        if (len >= SUB_MAX || memchr(s, '"', len)) return luaL_error(L, "node_next: bad subscript %d", i);
        used += (size_t)snprintf(ref + used, sizeof ref - used, i == 1 ? "%s(" : (i < n ? "\"%s\"," : "\"%s\")"),
                                 s);
        lua_pop(L, 1);
    }
    gtm_status_t status = gtm_ci("nextref", out, ref);
    if (status != 0) fail(L, "gtm_ci(nextref)", status);
    lua_pushstring(L, out);
    return 1;
}

/* cached and batched --------------------------------------------------------------------------------- */
typedef struct {
    char global[SUB_MAX], sub1[SUB_MAX];
    ci_name_descriptor next2, batch;
    char *buffer;
} Cache;

static Cache *check_cache(lua_State *L) { return (Cache *)luaL_checkudata(L, 1, "bbgtm.cache"); }

static int cache_new(lua_State *L) {
    size_t glen, slen;
    const char *g = luaL_checklstring(L, 1, &glen), *s1 = luaL_checklstring(L, 2, &slen);
    ensure_init(L);
    if (glen >= SUB_MAX || slen >= SUB_MAX) return luaL_error(L, "cache: name too long");
    Cache *c = (Cache *)lua_newuserdata(L, sizeof(Cache));
    memset(c, 0, sizeof *c);
    memcpy(c->global, g, glen);
    memcpy(c->sub1, s1, slen);
    c->next2.rtn_name.address = "next2";
    c->next2.rtn_name.length = 5;
    c->next2.handle = NULL;
    c->batch.rtn_name.address = "batch";
    c->batch.rtn_name.length = 5;
    c->batch.handle = NULL;
    c->buffer = malloc(BATCH_BYTES);
    if (c->buffer == NULL) return luaL_error(L, "cache: out of memory");
    luaL_getmetatable(L, "bbgtm.cache");
    lua_setmetatable(L, -2);
    return 1;
}

static int cache_next(lua_State *L) {
    Cache *c = check_cache(L);
    const char *x = luaL_checkstring(L, 2);
    char out[SUB_MAX];
    gtm_status_t status = gtm_cip(&c->next2, out, c->global, c->sub1, x);
    if (status != 0) fail(L, "gtm_cip(next2)", status);
    lua_pushstring(L, out);
    return 1;
}

static int cache_batch(lua_State *L) {
    Cache *c = check_cache(L);
    const char *x = luaL_checkstring(L, 2);
    gtm_long_t n = (gtm_long_t)luaL_checkinteger(L, 3);
    gtm_string_t out;
    out.address = c->buffer;
    out.length = BATCH_BYTES;
    gtm_status_t status = gtm_cip(&c->batch, c->global, c->sub1, x, n, &out);
    if (status != 0) fail(L, "gtm_cip(batch)", status);
    lua_pushlstring(L, out.address, (size_t)out.length);
    return 1;
}

static int cache_gc(lua_State *L) {
    Cache *c = check_cache(L);
    free(c->buffer);
    c->buffer = NULL;
    return 0;
}

static const luaL_Reg cache_methods[] = {{"next", cache_next}, {"batch", cache_batch}, {NULL, NULL}};
static const luaL_Reg functions[] = {{"node_next", node_next}, {"cache", cache_new}, {NULL, NULL}};

int luaopen_bbgtm(lua_State *L) {
    luaL_newmetatable(L, "bbgtm.cache");
    lua_pushcfunction(L, cache_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
#if LUA_VERSION_NUM >= 502
    luaL_setfuncs(L, cache_methods, 0);
#else
    luaL_register(L, NULL, cache_methods);
#endif
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
#if LUA_VERSION_NUM >= 502
    luaL_newlib(L, functions);
#else
    lua_newtable(L);
    luaL_register(L, NULL, functions);
#endif
    return 1;
}
