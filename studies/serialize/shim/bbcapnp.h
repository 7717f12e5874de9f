/* The C face of bbcapnp.c++ (libcapnp behind flat structs), as LuaJIT's FFI declares it: lua/codecs.lua
   reads this file into ffi.cdef, so the two cannot drift apart. Strings are pointer and length, not
   NUL-terminated; on decode they point into the message or into arrays the library reuses. An absent text
   (a null pointer in the message, nil in Lua) has p NULL; an absent list has its has_ flag 0. */
typedef struct { const char *p; size_t n; } bb_str;
typedef struct { bb_str name, value; } bb_header;
typedef struct { bb_str addr; uint16_t status; float response_time; uint8_t attempts; } bb_upstream;
typedef struct {
  uint64_t timestamp; uint32_t zone_id; bb_str client_ip; uint16_t client_port; uint16_t method;
  bb_str host, uri; uint16_t status; uint64_t bytes_sent; double request_time; int ssl; uint16_t cache_status;
  bb_str user_agent, referer; int has_upstream; bb_upstream upstream;
  int has_headers; const bb_header *headers; size_t n_headers; int has_tags; const bb_str *tags; size_t n_tags;
  float edge_ratio; uint64_t ray_id; int16_t colo;
} bb_log;
typedef struct { bb_str number; uint16_t type; } bb_phone;
typedef struct {
  uint32_t id; bb_str name, email; int has_phones; const bb_phone *phones; size_t n_phones;
  uint16_t employment; /* 0 unemployed, 1 employer, 2 school, 3 self-employed */
  bb_str employer_or_school;
} bb_person;
typedef struct { int has_people; const bb_person *people; size_t n_people; } bb_book;

const char *bbcapnp_error(void);
int bbcapnp_log_encode(const bb_log *in, uint8_t *out, size_t cap, size_t *len);
int bbcapnp_log_decode(const uint8_t *msg, size_t len, bb_log *out);
int bbcapnp_book_encode(const bb_book *in, uint8_t *out, size_t cap, size_t *len);
int bbcapnp_book_decode(const uint8_t *msg, size_t len, bb_book *out);
