// Debian's libcapnp (the C++ reference implementation), called from LuaJIT over FFI: the study's native
// Cap'n Proto mechanism, and the other side of its cross-implementation check. Lua fills the flat C structs
// of bbcapnp.h from its tables; this builds the message with libcapnp's generated builders and writes it
// flat; reading fills the same structs with pointers into the message (and into arrays this library owns,
// valid until its next call), from which Lua makes its tables.
//
// Messages are single-segment: the builder's first segment is large enough for any message of the study,
// as the Lua encoder's are, so both write the same framing. Errors (a malformed message, a message too big
// for the output) come back as a non-zero status and a message from bbcapnp_error().
#include <cstddef>
#include <cstdint>

extern "C" {
#include "bbcapnp.h"
}

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include <cstring>
#include <string>
#include <vector>

#include "addressbook.capnp.h"
#include "log.capnp.h"

namespace {

constexpr size_t kFirstSegmentWords = 1 << 16;  // 512 KiB: one segment for every message of the study
// Zero at start; libcapnp's builder zeroes what it used of it again when it is destroyed, as it requires.
capnp::word scratch[kFirstSegmentWords];
std::string last_error;

// What a read hands back beyond the message itself: arrays, reused from call to call.
std::vector<bb_header> headers;
std::vector<bb_str> tags;
std::vector<bb_person> people;
std::vector<bb_phone> phones;
std::vector<capnp::word> aligned;  // a copy of an input that is not word-aligned

bb_str str(capnp::Text::Reader t) { return bb_str{t.cStr(), t.size()}; }
// A text field as Lua sees it: absent (p NULL) when the message has a null pointer there.
#define TEXT(reader, Field) ((reader).has##Field() ? str((reader).get##Field()) : bb_str{nullptr, 0})
capnp::Text::Reader text(const bb_str &s) { return capnp::Text::Reader(s.p, s.n); }
// Set a text field only when Lua gave one: nil stays a null pointer.
#define SET_TEXT(builder, Field, s) \
  do {                               \
    if ((s).p) (builder).set##Field(text(s)); \
  } while (0)

// kj gives every exception a stack trace by unwinding the whole stack; called over FFI from a compiled
// LuaJIT trace (machine code without unwind tables) that unwinding aborts the process. Every entry point
// puts this on its stack (kj requires it there) to turn the traces off; the catch is still found, inside
// this library, before the unwinder reaches LuaJIT's frames.
class NoStackTrace final : public kj::ExceptionCallback {
 public:
  StackTraceMode stackTraceMode() override { return StackTraceMode::NONE; }
};

int fail(const kj::Exception &e) {
  last_error = e.getDescription().cStr();
  return 1;
}

// The message of a builder, flat, into out (cap bytes); its length in *len.
int write_flat(capnp::MessageBuilder &message, uint8_t *out, size_t cap, size_t *len) {
  if (message.getSegmentsForOutput().size() != 1) {
    last_error = "the message did not fit in one segment";
    return 1;
  }
  size_t bytes = capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word);
  if (bytes > cap) {
    last_error = "the output buffer is too small: " + std::to_string(bytes) + " bytes needed";
    return 2;
  }
  kj::ArrayOutputStream stream(kj::arrayPtr(out, cap));
  capnp::writeMessage(stream, message);
  *len = stream.getArray().size();
  return 0;
}

kj::ArrayPtr<const capnp::word> words_of(const uint8_t *msg, size_t len) {
  if (len % sizeof(capnp::word) != 0) {
    KJ_FAIL_REQUIRE("a message's length is a whole number of words", len);
  }
  if (reinterpret_cast<uintptr_t>(msg) % alignof(capnp::word) != 0) {
    aligned.resize(len / sizeof(capnp::word));
    std::memcpy(aligned.data(), msg, len);
    return kj::arrayPtr(aligned.data(), aligned.size());
  }
  return kj::arrayPtr(reinterpret_cast<const capnp::word *>(msg), len / sizeof(capnp::word));
}

}  // namespace

extern "C" {

const char *bbcapnp_error(void) { return last_error.c_str(); }

int bbcapnp_log_encode(const bb_log *in, uint8_t *out, size_t cap, size_t *len) {
  NoStackTrace no_trace;
  try {
    capnp::MallocMessageBuilder message(kj::arrayPtr(scratch, kFirstSegmentWords));
    auto r = message.initRoot<HttpLog>();
    r.setTimestamp(in->timestamp);
    r.setZoneId(in->zone_id);
    SET_TEXT(r, ClientIp, in->client_ip);
    r.setClientPort(in->client_port);
    r.setMethod(static_cast<HttpLog::Method>(in->method));
    SET_TEXT(r, Host, in->host);
    SET_TEXT(r, Uri, in->uri);
    r.setStatus(in->status);
    r.setBytesSent(in->bytes_sent);
    r.setRequestTime(in->request_time);
    r.setSsl(in->ssl != 0);
    r.setCacheStatus(static_cast<HttpLog::CacheStatus>(in->cache_status));
    SET_TEXT(r, UserAgent, in->user_agent);
    SET_TEXT(r, Referer, in->referer);
    if (in->has_upstream) {
      auto u = r.initUpstream();
      SET_TEXT(u, Addr, in->upstream.addr);
      u.setStatus(in->upstream.status);
      u.setResponseTime(in->upstream.response_time);
      u.setAttempts(in->upstream.attempts);
    }
    if (in->has_headers) {
      auto hs = r.initHeaders(static_cast<unsigned>(in->n_headers));
      for (unsigned i = 0; i < in->n_headers; i++) {
        SET_TEXT(hs[i], Name, in->headers[i].name);
        SET_TEXT(hs[i], Value, in->headers[i].value);
      }
    }
    if (in->has_tags) {
      auto ts = r.initTags(static_cast<unsigned>(in->n_tags));
      for (unsigned i = 0; i < in->n_tags; i++) {
        if (in->tags[i].p) ts.set(i, text(in->tags[i]));
      }
    }
    r.setEdgeRatio(in->edge_ratio);
    r.setRayId(in->ray_id);
    r.setColo(in->colo);
    return write_flat(message, out, cap, len);
  } catch (const kj::Exception &e) {
    return fail(e);
  }
}

int bbcapnp_log_decode(const uint8_t *msg, size_t len, bb_log *out) {
  NoStackTrace no_trace;
  try {
    capnp::FlatArrayMessageReader message(words_of(msg, len));
    auto r = message.getRoot<HttpLog>();
    out->timestamp = r.getTimestamp();
    out->zone_id = r.getZoneId();
    out->client_ip = TEXT(r, ClientIp);
    out->client_port = r.getClientPort();
    out->method = static_cast<uint16_t>(r.getMethod());
    out->host = TEXT(r, Host);
    out->uri = TEXT(r, Uri);
    out->status = r.getStatus();
    out->bytes_sent = r.getBytesSent();
    out->request_time = r.getRequestTime();
    out->ssl = r.getSsl();
    out->cache_status = static_cast<uint16_t>(r.getCacheStatus());
    out->user_agent = TEXT(r, UserAgent);
    out->referer = TEXT(r, Referer);
    out->has_upstream = r.hasUpstream();
    if (out->has_upstream) {
      auto u = r.getUpstream();
      out->upstream = bb_upstream{TEXT(u, Addr), u.getStatus(), u.getResponseTime(), u.getAttempts()};
    }
    out->has_headers = r.hasHeaders();
    auto hs = r.getHeaders();
    headers.resize(hs.size());
    for (unsigned i = 0; i < hs.size(); i++) headers[i] = bb_header{TEXT(hs[i], Name), TEXT(hs[i], Value)};
    out->headers = headers.data();
    out->n_headers = hs.size();
    out->has_tags = r.hasTags();
    auto ts = r.getTags();
    tags.resize(ts.size());
    for (unsigned i = 0; i < ts.size(); i++) tags[i] = str(ts[i]);  // a null element reads as "" here
    out->tags = tags.data();
    out->n_tags = ts.size();
    out->edge_ratio = r.getEdgeRatio();
    out->ray_id = r.getRayId();
    out->colo = r.getColo();
    return 0;
  } catch (const kj::Exception &e) {
    return fail(e);
  }
}

int bbcapnp_book_encode(const bb_book *in, uint8_t *out, size_t cap, size_t *len) {
  NoStackTrace no_trace;
  try {
    capnp::MallocMessageBuilder message(kj::arrayPtr(scratch, kFirstSegmentWords));
    auto book = message.initRoot<AddressBook>();
    if (in->has_people) {
      auto ps = book.initPeople(static_cast<unsigned>(in->n_people));
      for (unsigned i = 0; i < in->n_people; i++) {
        const bb_person &p = in->people[i];
        auto b = ps[i];
        b.setId(p.id);
        SET_TEXT(b, Name, p.name);
        SET_TEXT(b, Email, p.email);
        if (p.has_phones) {
          auto phs = b.initPhones(static_cast<unsigned>(p.n_phones));
          for (unsigned k = 0; k < p.n_phones; k++) {
            SET_TEXT(phs[k], Number, p.phones[k].number);
            phs[k].setType(static_cast<Person::PhoneNumber::Type>(p.phones[k].type));
          }
        }
        auto e = b.initEmployment();
        switch (p.employment) {
          case 0: e.setUnemployed(); break;
          case 1: e.setEmployer(text(p.employer_or_school)); break;
          case 2: e.setSchool(text(p.employer_or_school)); break;
          default: e.setSelfEmployed(); break;
        }
      }
    }
    return write_flat(message, out, cap, len);
  } catch (const kj::Exception &e) {
    return fail(e);
  }
}

int bbcapnp_book_decode(const uint8_t *msg, size_t len, bb_book *out) {
  NoStackTrace no_trace;
  try {
    capnp::FlatArrayMessageReader message(words_of(msg, len));
    auto book = message.getRoot<AddressBook>();
    out->has_people = book.hasPeople();
    auto ps = book.getPeople();
    size_t total_phones = 0;
    for (auto p : ps) total_phones += p.getPhones().size();
    people.resize(ps.size());
    phones.resize(total_phones);
    size_t next_phone = 0;
    for (unsigned i = 0; i < ps.size(); i++) {
      auto p = ps[i];
      bb_person &o = people[i];
      o.id = p.getId();
      o.name = TEXT(p, Name);
      o.email = TEXT(p, Email);
      o.has_phones = p.hasPhones();
      auto phs = p.getPhones();
      o.phones = phones.data() + next_phone;
      o.n_phones = phs.size();
      for (auto ph : phs) phones[next_phone++] = bb_phone{TEXT(ph, Number), static_cast<uint16_t>(ph.getType())};
      auto e = p.getEmployment();
      o.employment = static_cast<uint16_t>(e.which());
      o.employer_or_school = bb_str{nullptr, 0};
      if (e.isEmployer() && e.hasEmployer()) o.employer_or_school = str(e.getEmployer());
      if (e.isSchool() && e.hasSchool()) o.employer_or_school = str(e.getSchool());
    }
    out->people = people.data();
    out->n_people = ps.size();
    return 0;
  } catch (const kj::Exception &e) {
    return fail(e);
  }
}

}  // extern "C"
