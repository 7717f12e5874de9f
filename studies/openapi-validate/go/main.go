// Package main is kin-openapi as a C shared library (go build -buildmode=c-shared), for LuaJIT's FFI inside
// nginx and for the tight-loop probe: the seed's "Go FFI validator".
//
//	int bb_init(const char *spec_path);                      0, or -1 (bb_error says why)
//	int bb_validate_body(const char *body, int len);          0 valid, 1 invalid, -1 error
//	int bb_validate_request(const char *method, const char *path, const char *query,
//	                        const char *headers_json, const char *body, int len);
//	const char *bb_error(void);                               the last error or reason (owned by Go)
//
// bb_validate_body runs the operation's body schema (Schema.VisitJSON) on the decoded body.
// bb_validate_request does what the seed did on every call: decode the headers from JSON, rebuild an
// http.Request from the method, path and query, find its route and run openapi3filter.ValidateRequest.
// The library is loaded in each nginx worker (init_worker_by_lua), never in the master before fork.
package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"unsafe"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

var (
	mu       sync.Mutex
	router   routers.Router
	body     *openapi3.Schema
	lastErr  *C.char
	ctx      = context.Background()
	options  = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	notReady = errors.New("bb_init has not succeeded")
)

func setError(err error) {
	mu.Lock()
	defer mu.Unlock()
	if lastErr != nil {
		C.free(unsafe.Pointer(lastErr))
	}
	lastErr = C.CString(err.Error())
}

//export bb_error
func bb_error() *C.char {
	mu.Lock()
	defer mu.Unlock()
	return lastErr
}

//export bb_init
func bb_init(specPath *C.char) C.int {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(C.GoString(specPath))
	if err == nil {
		err = doc.Validate(loader.Context)
	}
	if err == nil {
		router, err = gorillamux.NewRouter(doc)
	}
	if err != nil {
		setError(fmt.Errorf("spec: %w", err))
		return -1
	}
	for _, item := range doc.Paths.Map() {
		if op := item.Post; op != nil && op.RequestBody != nil {
			if media := op.RequestBody.Value.Content.Get("application/json"); media != nil {
				body = media.Schema.Value
			}
		}
	}
	if body == nil {
		setError(errors.New("spec: no POST operation with an application/json body"))
		return -1
	}
	return 0
}

func verdict(err error) C.int {
	if err != nil {
		setError(err)
		return 1
	}
	return 0
}

//export bb_validate_body
func bb_validate_body(data *C.char, n C.int) C.int {
	if body == nil {
		setError(notReady)
		return -1
	}
	var value any
	if err := json.Unmarshal(C.GoBytes(unsafe.Pointer(data), n), &value); err != nil {
		return verdict(fmt.Errorf("body: %w", err))
	}
	return verdict(body.VisitJSON(value))
}

//export bb_validate_request
func bb_validate_request(method, path, query, headersJSON, data *C.char, n C.int) C.int {
	if router == nil {
		setError(notReady)
		return -1
	}
	var headers map[string]string
	if err := json.Unmarshal([]byte(C.GoString(headersJSON)), &headers); err != nil {
		setError(fmt.Errorf("headers: %w", err))
		return -1
	}
	target := C.GoString(path)
	if q := C.GoString(query); q != "" {
		target += "?" + q
	}
	payload := C.GoBytes(unsafe.Pointer(data), n)
	req, err := http.NewRequest(C.GoString(method), target, bytes.NewReader(payload))
	if err != nil {
		setError(fmt.Errorf("request: %w", err))
		return -1
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return verdict(fmt.Errorf("route: %w", err))
	}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options}
	err = openapi3filter.ValidateRequest(ctx, input)
	_, _ = io.Copy(io.Discard, req.Body)
	return verdict(err)
}

// Unused in a c-shared library, required by package main.
func main() {}
