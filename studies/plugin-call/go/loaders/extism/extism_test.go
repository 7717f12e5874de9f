package extism_test

import (
	"testing"

	"bridgebench/plugincall/contract"
	_ "bridgebench/plugincall/loaders/extism"
	"bridgebench/plugincall/loaders/hcwire/hctest"
)

func TestAnswers(t *testing.T) {
	wasm := hctest.BuildWasm(t, "bridgebench/plugincall/servers/extismplugin")
	hctest.CheckAnswers(t, "extism", contract.Config{"wasm": wasm})
}

func TestNoWasm(t *testing.T) {
	if _, err := contract.Open("extism", contract.Config{}); err == nil {
		t.Fatal("open without a wasm file: no error")
	}
}
