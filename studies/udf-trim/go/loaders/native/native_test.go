package native

import (
	"testing"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

func TestAgreesWithNative(t *testing.T) {
	h, err := udf.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	udftest.AgreesWithNative(t, h, func(w string) string { return w })
}

func TestErrors(t *testing.T) {
	h := &Handler{}
	if _, err := h.Load("nope"); err == nil {
		t.Error("an unknown workload must be a Load error")
	}
	if _, err := h.Value(udf.Row{}); err == nil {
		t.Error("Value before Load must be an error")
	}
	for _, w := range udf.Workloads {
		loaded, err := h.Load(w)
		if err != nil {
			t.Fatal(err)
		}
		udftest.RejectsUncrossable(t, loaded)
	}
}
