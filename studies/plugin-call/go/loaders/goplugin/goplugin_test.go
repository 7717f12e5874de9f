package goplugin

import (
	"strings"
	"testing"

	"bridgebench/plugincall/contract"
	"bridgebench/plugincall/contract/contracttest"
)

func TestContract(t *testing.T) {
	so := contracttest.BuildGoPlugin(t, t.TempDir())
	p, err := contract.Open(Name, contract.Config{"plugin": so})
	if err != nil && strings.Contains(err.Error(), "different version of package") {
		t.Skipf("this test binary cannot open the plugin (built with other flags?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	contracttest.Check(t, p)
}

func TestNoPath(t *testing.T) {
	if _, err := Open(contract.Config{}); err == nil {
		t.Error("Open without a path succeeded")
	}
}
