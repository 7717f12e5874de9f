package plugin

import (
	"path/filepath"
	"strings"
	"testing"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

func TestMain(m *testing.M) { udftest.Main(m) }

// load loads a symbol of the test plugin, skipping when this test binary cannot open plugins built
// by `go build` (e.g. under -cover or -race, which change the shared packages).
func load(t *testing.T, symbol string) udf.Handler {
	t.Helper()
	so := udftest.Plugin(t)
	h, err := (&Handler{}).Load(so + "#" + symbol)
	if err != nil && strings.Contains(err.Error(), "different version of package") {
		t.Skipf("this test binary cannot open the plugin (built with other flags?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAgreesWithNative(t *testing.T) {
	so := udftest.Plugin(t)
	load(t, "Trim")
	h, err := udf.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	udftest.AgreesWithNative(t, h, func(w string) string {
		return so + "#" + strings.ToUpper(w[:1]) + w[1:]
	})
}

func TestUncrossableRows(t *testing.T) {
	udftest.RejectsUncrossable(t, load(t, "Trim"))
	udftest.RejectsUncrossable(t, load(t, "Encode"))
}

func TestLoadErrors(t *testing.T) {
	so := udftest.Plugin(t)
	load(t, "Trim")
	for _, uri := range []string{"", "udf.so", so, so + "#", "#Trim", filepath.Join(t.TempDir(), "none.so#Trim"), so + "#Nope", so + "#main"} {
		if _, err := (&Handler{}).Load(uri); err == nil {
			t.Errorf("Load(%q) must be an error", uri)
		}
	}
	if _, err := (&Handler{}).Value(udf.Row{}); err == nil {
		t.Error("Value before Load must be an error")
	}
}
