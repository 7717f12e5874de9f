// Command udfbench is the udf-trim study's probe: one process execution of one mechanism on one
// workload and row size, speaking bridgebench/1 through bridgebench/probe.
//
//	UDF_LOADER=gopherlua-pooled UDF_STUDY_DIR=studies/udf-trim udfbench ITERATIONS WORKLOAD/SIZE [BATCH]
//
// Environment:
//
//	UDF_LOADER     the mechanism (udf.Names() lists those compiled in; see register*.go)
//	UDF_STUDY_DIR  the study folder: scripts/ holds the Lua scripts and the Go sources
//	UDF_PLUGIN     the plugin mechanism's .so, built from ./plugins/udf by the same toolchain
//	UDF_TIMEOUT_MS the Lua mechanisms' deadline per call (default 100; 0: none)
//
// Setup (untimed, reported as setup_s) builds the row, looks the loader up and loads the user code.
// The timed op is one Value call. The answer, computed outside the timed region, is the first 16 hex
// digits of the SHA-256 of the result's canonical JSON (udf.Canonical), so that every mechanism's
// answer compares whatever its codec's key order and spacing.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"bridgebench/probe"
	"bridgebench/udftrim/udf"
)

func main() { probe.MainWith(setup(os.Getenv), answer) }

// Source gives the uriOrCode a mechanism's Load takes for a workload ("trim" or "encode"); env reads
// the environment.
type Source func(env func(string) string, workload string) (string, error)

// sources holds the Source of each mechanism, or of its family: the part of its name before the
// first '-' ("gopherlua" for "gopherlua-pooled"). A register_*.go file may add or replace entries in an
// init function.
var sources = map[string]Source{
	"native":    func(_ func(string) string, w string) (string, error) { return w, nil },
	"plugin":    pluginSymbol,
	"gopherlua": luaScript,
	"luajit":    luaScript,
	"lua54":     luaScript,
	"yaegi":     goSource,
}

// exported is a workload's function name in Go user code: Trim, Encode.
func exported(workload string) string { return strings.ToUpper(workload[:1]) + workload[1:] }

func studyFile(env func(string) string, name string) (string, error) {
	dir := env("UDF_STUDY_DIR")
	if dir == "" {
		return "", fmt.Errorf("UDF_STUDY_DIR is not set (the study folder, with scripts/ in it)")
	}
	return filepath.Join(dir, "scripts", name), nil
}

func luaScript(env func(string) string, workload string) (string, error) {
	return studyFile(env, workload+".lua")
}

func goSource(env func(string) string, workload string) (string, error) {
	path, err := studyFile(env, workload+".go.txt")
	return path + "#" + exported(workload), err
}

func pluginSymbol(env func(string) string, workload string) (string, error) {
	so := env("UDF_PLUGIN")
	if so == "" {
		return "", fmt.Errorf("UDF_PLUGIN is not set (the .so built with go build -buildmode=plugin ./plugins/udf)")
	}
	return so + "#" + exported(workload), nil
}

func sourceFor(loader string) (Source, error) {
	if s, ok := sources[loader]; ok {
		return s, nil
	}
	family, _, _ := strings.Cut(loader, "-")
	if s, ok := sources[family]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("udfbench does not know what %q loads (add it to sources)", loader)
}

// parseParam splits "workload/size" and checks both.
func parseParam(param string) (workload, size string, err error) {
	workload, size, ok := strings.Cut(param, "/")
	if !ok {
		return "", "", fmt.Errorf("PARAM must be WORKLOAD/SIZE (e.g. trim/small), got %q", param)
	}
	if _, err := udf.Native(workload); err != nil {
		return "", "", err
	}
	return workload, size, nil
}

// setup returns the probe's Setup for the mechanism named by UDF_LOADER in env.
func setup(env func(string) string) probe.Setup {
	return func(param string) (probe.Op, func(), error) {
		loader := env("UDF_LOADER")
		if loader == "" {
			return nil, nil, fmt.Errorf("UDF_LOADER is not set (one of %v)", udf.Names())
		}
		workload, size, err := parseParam(param)
		if err != nil {
			return nil, nil, err
		}
		row, err := udf.MakeRow(size)
		if err != nil {
			return nil, nil, err
		}
		h, err := udf.Lookup(loader)
		if err != nil {
			return nil, nil, err
		}
		source, err := sourceFor(loader)
		if err != nil {
			return nil, nil, err
		}
		uri, err := source(env, workload)
		if err != nil {
			return nil, nil, err
		}
		loaded, err := h.Load(uri)
		if err != nil {
			return nil, nil, err
		}
		var cleanup func()
		if c, ok := loaded.(io.Closer); ok {
			cleanup = func() { _ = c.Close() }
		}
		op := func() (string, error) {
			v, err := loaded.Value(row)
			if s, ok := v.(string); ok || err != nil {
				return s, err
			}
			return text(loader, v)
		}
		return op, cleanup, nil
	}
}

// text is the op's slow path, for a result that is not a string.
func text(loader string, v any) (string, error) {
	if b, ok := v.([]byte); ok {
		return string(b), nil
	}
	return "", fmt.Errorf("%s returned a %T, want JSON text", loader, v)
}

// answer is the reported answer of a result: the first 16 hex digits of the SHA-256 of its canonical
// JSON text.
func answer(raw string) (string, error) {
	c, err := udf.Canonical(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:])[:16], nil
}
