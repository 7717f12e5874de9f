// Command callbench is the plugin-call study's probe: one process execution of one mechanism on one
// shape of the contract, speaking bridgebench/1 through bridgebench/probe.
//
//	CALL_MECHANISM=goplugin CALL_PLUGIN=build/goplugin.so callbench ITERATIONS PARAM [BATCH]
//
// PARAM is "int" (contract.IntFunc) or "bytes/SIZE" (contract.BytesFunc on contract.Payload of a size
// in contract.Payloads: bytes/0, bytes/64, bytes/1k, bytes/16k).
//
// Environment:
//
//	CALL_MECHANISM  the mechanism (contract.Open's error lists those compiled in; see register*.go)
//	CALL_*          every variable starting with CALL_ goes into the mechanism's contract.Config,
//	                keyed by the rest of its name in lower case: CALL_PLUGIN (the goplugin .so, built
//	                with go build -buildmode=plugin ./plugins/goplugin) is Config["plugin"], CALL_WASM
//	                (the wazero module, built from ./wasm/guest) is Config["wasm"], and so on.
//
// Setup (reported as setup_s, the start-up cost) opens the mechanism (load, spawn or instantiate) and
// makes one warm call whose result it checks, so "to first call" is included. The timed op is one
// call: Int(12345) or Bytes(payload). The argument is the same on every call so that every iteration
// answers the same; no mechanism can exploit that, as none is told (each must cross to its plugin).
// The op only keeps the result and returns its error (an error fails the run); the answer, computed
// outside the timed region from the batch's last result, is the result in decimal (int) or
// "LENGTH:first 8 bytes in hex" (bytes), after checking the whole result against the contract's
// reference function.
package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"bridgebench/plugincall/contract"
	"bridgebench/probe"
)

// IntArg is the argument of every int call.
const IntArg = 12345

func main() {
	b := newBench(os.Getenv, os.Environ)
	probe.MainWith(b.setup, b.answer)
}

// Config gathers the CALL_* variables of environ into a contract.Config.
func Config(environ []string) contract.Config {
	cfg := contract.Config{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if rest, isCall := strings.CutPrefix(k, "CALL_"); ok && isCall && rest != "" {
			cfg[strings.ToLower(rest)] = v
		}
	}
	return cfg
}

// bench is one run's state: what the op keeps of the last call, for the answer.
type bench struct {
	getenv  func(string) string
	environ func() []string

	isBytes  bool
	lastInt  int64
	lastOut  []byte
	wantInt  int64
	wantOut  []byte
	mechName string
}

func newBench(getenv func(string) string, environ func() []string) *bench {
	return &bench{getenv: getenv, environ: environ}
}

// parseParam returns the payload of "bytes/SIZE", or nil for "int".
func parseParam(param string) (payload []byte, isBytes bool, err error) {
	if param == "int" {
		return nil, false, nil
	}
	if size, ok := strings.CutPrefix(param, "bytes/"); ok {
		if n, known := contract.Payloads[size]; known {
			return contract.Payload(n), true, nil
		}
	}
	return nil, false, fmt.Errorf("PARAM must be int or bytes/SIZE with SIZE one of 0, 64, 1k, 16k; got %q", param)
}

func (b *bench) setup(param string) (probe.Op, func(), error) {
	payload, isBytes, err := parseParam(param)
	if err != nil {
		return nil, nil, err
	}
	name := b.getenv("CALL_MECHANISM")
	if name == "" {
		return nil, nil, fmt.Errorf("CALL_MECHANISM is not set")
	}
	p, err := contract.Open(name, Config(b.environ()))
	if err != nil {
		return nil, nil, err
	}
	b.mechName, b.isBytes = name, isBytes
	cleanup := func() {
		if err := p.Close(); err != nil {
			panic(fmt.Errorf("closing %s: %w", name, err))
		}
	}
	var op probe.Op
	if isBytes {
		b.wantOut = contract.BytesFunc(payload)
		op = func() (string, error) {
			var err error
			b.lastOut, err = p.Bytes(payload)
			return "", err
		}
	} else {
		b.wantInt = contract.IntFunc(IntArg)
		op = func() (string, error) {
			var err error
			b.lastInt, err = p.Int(IntArg)
			return "", err
		}
	}
	// One warm call, checked, so that the start-up the probe reports runs to the first call.
	if _, err := op(); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("the warm call: %w", err)
	}
	if _, err := b.answer(""); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("the warm call: %w", err)
	}
	return op, cleanup, nil
}

// answer reports the last call's result (the op's raw answer is empty), failing if it is not the
// contract's.
func (b *bench) answer(string) (string, error) {
	if !b.isBytes {
		if b.lastInt != b.wantInt {
			return "", fmt.Errorf("%s: Int(%d) = %d, want %d", b.mechName, IntArg, b.lastInt, b.wantInt)
		}
		return strconv.FormatInt(b.lastInt, 10), nil
	}
	if !bytes.Equal(b.lastOut, b.wantOut) {
		return "", fmt.Errorf("%s: Bytes returned %d bytes differing from the contract's %d", b.mechName, len(b.lastOut), len(b.wantOut))
	}
	return strconv.Itoa(len(b.lastOut)) + ":" + hex.EncodeToString(b.lastOut[:min(8, len(b.lastOut))]), nil
}
