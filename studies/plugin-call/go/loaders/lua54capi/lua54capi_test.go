package lua54capi

import (
	"testing"

	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/contract/contracttest"
)

func TestContract(t *testing.T) {
	p, err := contract.Open(Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	contracttest.Check(t, p)
}

func TestClosed(t *testing.T) {
	p, err := Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.Int(1); err == nil {
		t.Error("Int after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
}
