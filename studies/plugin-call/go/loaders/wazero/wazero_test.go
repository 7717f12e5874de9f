package wazero

import (
	"path/filepath"
	"testing"

	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/contract/contracttest"
)

func TestContract(t *testing.T) {
	p, err := contract.Open(Name, contract.Config{"wasm": contracttest.BuildWasm(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	contracttest.Check(t, p)
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	if _, err := p.Int(1); err == nil {
		t.Error("Int after Close succeeded")
	}
}

func TestNoModule(t *testing.T) {
	if _, err := Open(contract.Config{}); err == nil {
		t.Error("Open without a path succeeded")
	}
	if _, err := Open(contract.Config{"wasm": filepath.Join(t.TempDir(), "none.wasm")}); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}
