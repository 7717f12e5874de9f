# One HTTP request as an edge server's log pipeline ships it: timestamps, addresses, status, sizes, a few
# strings, a nested struct and lists. Numbers are chosen to survive every codec of the study exactly: 64-bit
# fields hold values below 2^53 (Lua numbers), Float32 fields multiples of 1/1024.
@0xb7cab06a6bec6fc8;

struct HttpLog {
  timestamp @0 :UInt64;          # ms since the epoch
  zoneId @1 :UInt32;
  clientIp @2 :Text;
  clientPort @3 :UInt16;
  method @4 :Method;
  host @5 :Text;
  uri @6 :Text;
  status @7 :UInt16 = 200;
  bytesSent @8 :UInt64;
  requestTime @9 :Float64;       # seconds
  ssl @10 :Bool;
  cacheStatus @11 :CacheStatus;
  userAgent @12 :Text;
  referer @13 :Text;
  upstream @14 :Upstream;
  headers @15 :List(Header);
  tags @16 :List(Text);
  edgeRatio @17 :Float32 = 1.0;
  rayId @18 :UInt64;
  colo @19 :Int16 = -1;

  enum Method {
    get @0;
    head @1;
    post @2;
    put @3;
    delete @4;
    options @5;
  }

  enum CacheStatus {
    unknown @0;
    hit @1;
    miss @2;
    expired @3;
    bypass @4;
  }
}

struct Upstream {
  addr @0 :Text;
  status @1 :UInt16;
  responseTime @2 :Float32;
  attempts @3 :UInt8 = 1;
}

struct Header {
  name @0 :Text;
  value @1 :Text;
}
