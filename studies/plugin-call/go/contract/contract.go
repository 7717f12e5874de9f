// Package contract is the one plugin contract every mechanism of the plugin-call study implements: a
// deterministic function of its input in two shapes, f(int) int and f(bytes) bytes, so per-call and
// per-byte costs separate (the seed, go-plugin-benchmark, called rand.Int with no payload).
package contract

import (
	"fmt"
	"sort"
	"sync"
)

// Plugin is what a mechanism hands the host once it is loaded, spawned or instantiated.
type Plugin interface {
	Int(x int64) (int64, error)
	Bytes(in []byte) ([]byte, error)
	Close() error
}

// IntFunc is the f(int) int every mechanism computes: a multiplicative hash, cheap but not foldable.
func IntFunc(x int64) int64 { return (x*2654435761 + 12345) & 0xffffffff }

// BytesFunc is the f(bytes) bytes every mechanism computes: the payload reversed, each byte XOR 0x5a.
func BytesFunc(in []byte) []byte {
	out := make([]byte, len(in))
	BytesInto(out, in)
	return out
}

// BytesInto is BytesFunc writing into out (len(out) >= len(in)), for hosts that own the output buffer.
func BytesInto(out, in []byte) {
	for i, b := range in {
		out[len(in)-1-i] = b ^ 0x5a
	}
}

// Payloads are the sizes of the bytes shape, by the name a benchmark uses.
var Payloads = map[string]int{"0": 0, "64": 64, "1k": 1024, "16k": 16384}

// Payload makes the input of a size: the same bytes on every call and machine.
func Payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*31 + 7)
	}
	return p
}

// Config tells an opener where the study's built artefacts are (the build folder, a plugin path…).
type Config map[string]string

var (
	mu      sync.Mutex
	openers = map[string]func(Config) (Plugin, error){}
)

// Register makes a mechanism available by name (from an init function of its package).
func Register(name string, open func(Config) (Plugin, error)) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[name]; dup {
		panic("contract: mechanism registered twice: " + name)
	}
	openers[name] = open
}

// Open loads, spawns or instantiates a mechanism's plugin, ready for its first call.
func Open(name string, cfg Config) (Plugin, error) {
	mu.Lock()
	open, ok := openers[name]
	names := make([]string, 0, len(openers))
	for n := range openers {
		names = append(names, n)
	}
	mu.Unlock()
	if !ok {
		sort.Strings(names)
		return nil, fmt.Errorf("no mechanism %q in this binary (has: %v)", name, names)
	}
	return open(cfg)
}
