package direct

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
