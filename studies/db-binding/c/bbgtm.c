/* A Lua module over GT.M's call-ins, in the three binding styles of making-lua-yottadb-fast.txt, and the
 * seed's two kinds of node object. It builds unchanged against Lua 5.4 and LuaJIT (the Lua 5.1 API).
 *
 * naive (like lua-yottadb v1): subs is a Lua table {global, sub1, ..., subN}; every subscript is checked
 * (again: the Lua side checked it too) and the reference ^G("sub1",...,"subN") is rebuilt as a string on
 * every call, which M follows by indirection (and compiles, once per distinct string).
 *   bbgtm.node_next(subs)        the last subscript after subs's, "" after the last
 *   bbgtm.node_get(subs)         the node's value ("" if it has none)
 *   bbgtm.node_set(subs, value)
 * cached (the seed's fix, as call-ins allow it): a userdata holding the prepared global and first
 * subscript and kept call-in handles (gtm_cip); only the last subscript crosses on each call.
 *   c = bbgtm.cache(global, sub1); c:next(x); c:get(x); c:set(x, value)
 * batched: one call-in moves many nodes; the module unpacks them into a Lua table the caller keeps.
 *   c:batch(x, n, t)      fills t[1..k] with up to n subscripts after x; returns k (0 after the last)
 *   c:getbatch(x, n, t)   fills t with up to n (subscript, value) pairs after x: t[2i-1], t[2i]; returns k
 *   c:setbatch(t, k)      sets the k (subscript, value) pairs t[1..2k]
 * bbgtm.clear(), bbgtm.tally(): the set benchmark's bookends (kill ^BBSET; "count sum" of ^BBSET("lvd",*))
 * node objects (the seed's node-creation benchmark; no engine needed):
 *   bbgtm.node(varname, sub1, ...)   a v2-style node: one userdata holding its subscripts in C; indexing it
 *                                    with a key that is not a method makes the child node (node.a[3]);
 *                                    methods depth(), name(), ref() */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtmxc_types.h"
#include "lauxlib.h"
#include "lua.h"

#define SUB_MAX 255               /* a GT.M key is at most 255 bytes here (the study's key_size) */
#define BUFFER_BYTES (1 << 20)    /* an M string holds at most 1 MiB */

#if LUA_VERSION_NUM >= 502
#define raw_length(L, i) lua_rawlen(L, i)
#else
#define raw_length(L, i) lua_objlen(L, i)
#endif

static void fail(lua_State *L, const char *what, gtm_status_t status) {
    char msg[512];
    gtm_zstatus(msg, sizeof msg);
    luaL_error(L, "%s failed (%d): %s", what, (int)status, msg);
}

static char *buffer;  /* the output of get and batch call-ins, allocated once */

static void ensure_init(lua_State *L) {
    if (buffer == NULL) {
        gtm_status_t status = gtm_init();
        if (status != 0) fail(L, "gtm_init", status);
        buffer = malloc(BUFFER_BYTES);
        if (buffer == NULL) luaL_error(L, "bbgtm: out of memory");
    }
}

/* A string or number argument as a GT.M string (numbers in Lua's own text form). */
static gtm_string_t arg_string(lua_State *L, int index, const char *what) {
    size_t len;
    const char *s;
    int type = lua_type(L, index);
    if (type != LUA_TSTRING && type != LUA_TNUMBER) luaL_error(L, "%s: expected a string or a number", what);
    s = lua_tolstring(L, index, &len);
    gtm_string_t out = {(gtm_long_t)len, (char *)s};
    return out;
}

/* naive ---------------------------------------------------------------------------------------------- */
/* Check every element of subs (as v1 did on every call) and write the reference ^G("s1",...) as M source:
 * each subscript quoted, its quotes doubled. */
static const char *build_ref(lua_State *L, luaL_Buffer *b) {
    int n;
    luaL_checktype(L, 1, LUA_TTABLE);
    n = (int)raw_length(L, 1);
    if (n < 2) luaL_error(L, "naive: need a global and at least one subscript");
    luaL_buffinit(L, b);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s;
        lua_rawgeti(L, 1, i);
        if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "naive: subscript %d is not a string", i - 1);
        s = lua_tolstring(L, -1, &len);
        lua_pop(L, 1);
        if (i == 1) {
            if (len < 2 || len > 32 || s[0] != '^') luaL_error(L, "naive: %s is not a global name", s);
            luaL_addlstring(b, s, len);
            luaL_addchar(b, '(');
            continue;
        }
        if (len > SUB_MAX) luaL_error(L, "naive: subscript %d is longer than %d bytes", i - 1, SUB_MAX);
        luaL_addchar(b, '"');
        for (size_t k = 0; k < len; k++) {
            if (s[k] == '"') luaL_addchar(b, '"');
            luaL_addchar(b, s[k]);
        }
        luaL_addchar(b, '"');
        luaL_addchar(b, i < n ? ',' : ')');
    }
    luaL_pushresult(b);
    return lua_tostring(L, -1);
}

static int node_next(lua_State *L) {
    luaL_Buffer b;
    char out[SUB_MAX + 1];
    ensure_init(L);
    const char *ref = build_ref(L, &b);
    gtm_status_t status = gtm_ci("nextref", out, ref);
    if (status != 0) fail(L, "gtm_ci(nextref)", status);
    lua_pushstring(L, out);
    return 1;
}

static int node_get(lua_State *L) {
    luaL_Buffer b;
    ensure_init(L);
    const char *ref = build_ref(L, &b);
    gtm_string_t out = {BUFFER_BYTES, buffer};
    gtm_status_t status = gtm_ci("getref", ref, &out);
    if (status != 0) fail(L, "gtm_ci(getref)", status);
    lua_pushlstring(L, out.address, (size_t)out.length);
    return 1;
}

static int node_set(lua_State *L) {
    luaL_Buffer b;
    ensure_init(L);
    gtm_string_t value = arg_string(L, 2, "naive set: value");
    const char *ref = build_ref(L, &b);
    gtm_status_t status = gtm_ci("setref", ref, &value);
    if (status != 0) fail(L, "gtm_ci(setref)", status);
    return 0;
}

/* the set benchmark's bookends: empty ^BBSET; "count sum" of what it holds, counted by M */
static int clear(lua_State *L) {
    ensure_init(L);
    gtm_status_t status = gtm_ci("clear");
    if (status != 0) fail(L, "gtm_ci(clear)", status);
    return 0;
}

static int tally(lua_State *L) {
    char out[64];
    ensure_init(L);
    gtm_status_t status = gtm_ci("tally", out);
    if (status != 0) fail(L, "gtm_ci(tally)", status);
    lua_pushstring(L, out);
    return 1;
}

/* cached and batched --------------------------------------------------------------------------------- */
enum { NEXT2, GET2, SET2, BATCH, GETBATCH, SETBATCH, ENTRIES };
static const char *entry_names[ENTRIES] = {"next2", "get2", "set2", "batch", "getbatch", "setbatch"};

typedef struct {
    char global[33], sub1[SUB_MAX + 1];
    ci_name_descriptor entry[ENTRIES];
} Cache;

static Cache *check_cache(lua_State *L) { return (Cache *)luaL_checkudata(L, 1, "bbgtm.cache"); }

static int cache_new(lua_State *L) {
    size_t glen, slen;
    const char *g = luaL_checklstring(L, 1, &glen);
    gtm_string_t s1 = arg_string(L, 2, "cache: first subscript");
    slen = (size_t)s1.length;
    ensure_init(L);
    if (glen < 2 || glen > 32 || g[0] != '^') return luaL_error(L, "cache: %s is not a global name", g);
    if (slen > SUB_MAX || memchr(s1.address, '\0', slen)) return luaL_error(L, "cache: bad first subscript");
    Cache *c = (Cache *)lua_newuserdata(L, sizeof(Cache));
    memset(c, 0, sizeof *c);
    memcpy(c->global, g, glen);
    memcpy(c->sub1, s1.address, slen);
    for (int i = 0; i < ENTRIES; i++) {
        c->entry[i].rtn_name.address = (char *)entry_names[i];
        c->entry[i].rtn_name.length = (gtm_long_t)strlen(entry_names[i]);
        c->entry[i].handle = NULL;  /* gtm_cip fills it on the first call and reuses it after */
    }
    luaL_getmetatable(L, "bbgtm.cache");
    lua_setmetatable(L, -2);
    return 1;
}

static int cache_next(lua_State *L) {
    Cache *c = check_cache(L);
    gtm_string_t x = arg_string(L, 2, "next: subscript");
    char out[SUB_MAX + 1];
    gtm_status_t status = gtm_cip(&c->entry[NEXT2], out, c->global, c->sub1, &x);
    if (status != 0) fail(L, "gtm_cip(next2)", status);
    lua_pushstring(L, out);
    return 1;
}

static int cache_get(lua_State *L) {
    Cache *c = check_cache(L);
    gtm_string_t x = arg_string(L, 2, "get: subscript");
    gtm_string_t out = {BUFFER_BYTES, buffer};
    gtm_status_t status = gtm_cip(&c->entry[GET2], c->global, c->sub1, &x, &out);
    if (status != 0) fail(L, "gtm_cip(get2)", status);
    lua_pushlstring(L, out.address, (size_t)out.length);
    return 1;
}

static int cache_set(lua_State *L) {
    Cache *c = check_cache(L);
    gtm_string_t x = arg_string(L, 2, "set: subscript"), v = arg_string(L, 3, "set: value");
    gtm_status_t status = gtm_cip(&c->entry[SET2], c->global, c->sub1, &x, &v);
    if (status != 0) fail(L, "gtm_cip(set2)", status);
    return 0;
}

/* Read a length-prefixed field at *p (prefix of `width` bytes, big-endian) and push it; 0 if malformed. */
static int push_field(lua_State *L, const unsigned char **p, const unsigned char *end, int width) {
    size_t len = 0;
    if (*p + width > end) return 0;
    for (int i = 0; i < width; i++) len = len * 256 + (*p)[i];
    *p += width;
    if (*p + len > end) return 0;
    lua_pushlstring(L, (const char *)*p, len);
    *p += len;
    return 1;
}

/* One batched call-in (batch or getbatch) and its reply unpacked into the table at argument 4: subscripts
 * t[1..k], or with values (getbatch) pairs t[2i-1], t[2i]; returns k. A batch of subscripts holds at most
 * BUFFER_BYTES / (SUB_MAX + 1) of them; getbatch's M side stops early rather than overflow. */
static int batch_call(lua_State *L, int entry, const char *what, int with_values) {
    Cache *c = check_cache(L);
    gtm_string_t x = arg_string(L, 2, what);
    gtm_long_t n = (gtm_long_t)luaL_checkinteger(L, 3);
    luaL_checktype(L, 4, LUA_TTABLE);
    gtm_long_t most = with_values ? BUFFER_BYTES : BUFFER_BYTES / (SUB_MAX + 1);
    if (n < 1 || n > most) return luaL_error(L, "%s: n must be 1..%d", what, (int)most);
    gtm_string_t out = {BUFFER_BYTES, buffer};
    gtm_status_t status = gtm_cip(&c->entry[entry], c->global, c->sub1, &x, n, &out);
    if (status != 0) {
        char call[32];
        snprintf(call, sizeof call, "gtm_cip(%s)", what);
        fail(L, call, status);
    }
    const unsigned char *p = (const unsigned char *)out.address, *end = p + out.length;
    int k = 0;
    while (p < end) {
        if (!push_field(L, &p, end, 1)) return luaL_error(L, "%s: malformed reply from M", what);
        lua_rawseti(L, 4, with_values ? 2 * k + 1 : k + 1);
        if (with_values) {
            if (!push_field(L, &p, end, 3)) return luaL_error(L, "%s: malformed reply from M", what);
            lua_rawseti(L, 4, 2 * k + 2);
        }
        k++;
    }
    lua_pushinteger(L, k);
    return 1;
}

static int cache_batch(lua_State *L) { return batch_call(L, BATCH, "batch", 0); }

static int cache_getbatch(lua_State *L) { return batch_call(L, GETBATCH, "getbatch", 1); }

static int cache_setbatch(lua_State *L) {
    Cache *c = check_cache(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer k = luaL_checkinteger(L, 3);
    unsigned char *p = (unsigned char *)buffer, *end = p + BUFFER_BYTES;
    for (lua_Integer i = 1; i <= 2 * k; i++) {
        lua_rawgeti(L, 2, (int)i);
        gtm_string_t s = arg_string(L, -1, i % 2 ? "setbatch: subscript" : "setbatch: value");
        size_t len = (size_t)s.length;
        int width = i % 2 ? 1 : 3;
        if ((i % 2 && len > SUB_MAX) || p + width + len > end)
            return luaL_error(L, "setbatch: pair %d does not fit one call-in", (int)((i + 1) / 2));
        for (int w = width - 1; w >= 0; w--) *p++ = (unsigned char)((len >> (8 * w)) & 0xff);
        memcpy(p, s.address, len);
        p += len;
        lua_pop(L, 1);
    }
    gtm_string_t in = {(gtm_long_t)(p - (unsigned char *)buffer), buffer};
    gtm_status_t status = gtm_cip(&c->entry[SETBATCH], c->global, c->sub1, &in);
    if (status != 0) fail(L, "gtm_cip(setbatch)", status);
    return 0;
}

/* v2-style node objects ------------------------------------------------------------------------------- */
/* One userdata a node: its depth, then depth+1 end offsets, then the varname and subscripts' bytes. A child
 * copies its parent's bytes and adds its own subscript: one allocation, no Lua table. */
typedef struct {
    int depth;          /* subscripts after the varname */
    uint32_t ends[];    /* ends[0]: end of the varname; ends[i]: end of subscript i; the bytes follow */
} Node;

#define NODE_BYTES(n) ((char *)&(n)->ends[(n)->depth + 1])

static Node *new_node(lua_State *L, int depth, size_t bytes) {
    Node *n = (Node *)lua_newuserdata(L, sizeof(Node) + sizeof(uint32_t) * (size_t)(depth + 1) + bytes);
    n->depth = depth;
    lua_pushvalue(L, lua_upvalueindex(1));  /* the node metatable */
    lua_setmetatable(L, -2);
    return n;
}

static Node *check_node(lua_State *L, int index) { return (Node *)luaL_checkudata(L, index, "bbgtm.node"); }

static int node_new(lua_State *L) {
    int top = lua_gettop(L);
    size_t total = 0;
    for (int i = 1; i <= top; i++) total += (size_t)arg_string(L, i, "node: varname and subscripts").length;
    Node *n = new_node(L, top - 1, total);
    char *bytes = NODE_BYTES(n);
    uint32_t end = 0;
    for (int i = 1; i <= top; i++) {
        gtm_string_t s = arg_string(L, i, "node");
        memcpy(bytes + end, s.address, (size_t)s.length);
        end += (uint32_t)s.length;
        n->ends[i - 1] = end;
    }
    return 1;
}

/* __index: a method if the key names one, else the child node with that subscript. */
static int node_index(lua_State *L) {
    Node *parent = check_node(L, 1);
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(2));  /* the methods */
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);
    gtm_string_t key = arg_string(L, 2, "node subscript");
    uint32_t used = parent->ends[parent->depth];
    Node *child = new_node(L, parent->depth + 1, used + (size_t)key.length);
    memcpy(child->ends, parent->ends, sizeof(uint32_t) * (size_t)(parent->depth + 1));
    child->ends[child->depth] = used + (uint32_t)key.length;
    char *bytes = NODE_BYTES(child);
    memcpy(bytes, NODE_BYTES(parent), used);
    memcpy(bytes + used, key.address, (size_t)key.length);
    return 1;
}

static int node_depth(lua_State *L) {
    lua_pushinteger(L, check_node(L, 1)->depth);
    return 1;
}

static int node_name(lua_State *L) {
    Node *n = check_node(L, 1);
    uint32_t start = n->depth ? n->ends[n->depth - 1] : 0;
    lua_pushlstring(L, NODE_BYTES(n) + start, n->ends[n->depth] - start);
    return 1;
}

/* varname("sub1","sub2",...) with quotes doubled, the same text the v1 node's ref() makes */
static int node_ref(lua_State *L) {
    Node *n = check_node(L, 1);
    const char *bytes = NODE_BYTES(n);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, bytes, n->ends[0]);
    for (int i = 1; i <= n->depth; i++) {
        luaL_addstring(&b, i == 1 ? "(\"" : ",\"");
        for (uint32_t k = n->ends[i - 1]; k < n->ends[i]; k++) {
            if (bytes[k] == '"') luaL_addchar(&b, '"');
            luaL_addchar(&b, bytes[k]);
        }
        luaL_addchar(&b, '"');
    }
    if (n->depth) luaL_addchar(&b, ')');
    luaL_pushresult(&b);
    return 1;
}

static void set_functions(lua_State *L, const luaL_Reg *functions) {
#if LUA_VERSION_NUM >= 502
    luaL_setfuncs(L, functions, 0);
#else
    luaL_register(L, NULL, functions);
#endif
}

static const luaL_Reg cache_methods[] = {{"next", cache_next},         {"get", cache_get},
                                         {"set", cache_set},           {"batch", cache_batch},
                                         {"getbatch", cache_getbatch}, {"setbatch", cache_setbatch},
                                         {NULL, NULL}};
static const luaL_Reg node_methods[] = {{"depth", node_depth}, {"name", node_name}, {"ref", node_ref},
                                        {NULL, NULL}};
static const luaL_Reg functions[] = {{"node_next", node_next}, {"node_get", node_get}, {"node_set", node_set},
                                     {"cache", cache_new},        {"clear", clear},       {"tally", tally},
                                     {NULL, NULL}};

int luaopen_bbgtm(lua_State *L) {
    luaL_newmetatable(L, "bbgtm.cache");
    lua_newtable(L);
    set_functions(L, cache_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);

    lua_newtable(L);  /* the module */
    set_functions(L, functions);

    luaL_newmetatable(L, "bbgtm.node");
    lua_newtable(L);  /* node methods */
    set_functions(L, node_methods);
    lua_pushvalue(L, -2);  /* metatable */
    lua_pushvalue(L, -2);  /* methods */
    lua_pushcclosure(L, node_index, 2);
    lua_setfield(L, -3, "__index");
    lua_getfield(L, -1, "ref");
    lua_setfield(L, -3, "__tostring");
    /* stack: module, metatable, methods */
    lua_pushvalue(L, -2);
    lua_pushcclosure(L, node_new, 1);
    lua_setfield(L, -4, "node");
    lua_pop(L, 2);
    return 1;
}
