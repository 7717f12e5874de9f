package yaegi

import (
	"os"
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

func TestBadSource(t *testing.T) {
	path := t.TempDir() + "/bad.go"
	if err := os.WriteFile(path, []byte("package plugin\nfunc Int(x int64) string { return \"\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(contract.Config{"yaegi_source": path}); err == nil {
		t.Error("Open of a source with the wrong signatures succeeded")
	}
}
