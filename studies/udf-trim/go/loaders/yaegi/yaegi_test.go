package yaegi

import (
	"path/filepath"
	"strings"
	"testing"

	"bridgebench/udftrim/udf"
	"bridgebench/udftrim/udf/udftest"
)

func source(workload string) string {
	return filepath.Join("../../../scripts", workload+".go.txt") + "#" + strings.ToUpper(workload[:1]) + workload[1:]
}

func TestAgreesWithNative(t *testing.T) {
	h, err := udf.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	udftest.AgreesWithNative(t, h, source)
}

func TestUncrossableRows(t *testing.T) {
	for _, w := range udf.Workloads {
		h, err := (&Handler{}).Load(source(w))
		if err != nil {
			t.Fatal(err)
		}
		udftest.RejectsUncrossable(t, h)
	}
}

func TestPanicIsAnError(t *testing.T) {
	code := "package user\n\nfunc Boom(row map[string]any) (any, error) {\n\tvar m map[string]int\n\tm[\"x\"] = row[\"n\"].(int)\n\treturn nil, nil\n}\n#Boom"
	h, err := (&Handler{}).Load(code)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []udf.Row{{"n": 1}, {"n": "not an int"}} {
		if _, err := udftest.Call(h, row); err == nil || !strings.Contains(err.Error(), "panic in inline.go#Boom") {
			t.Errorf("row %v: error %v, want the panic as an error", row, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	bad := map[string]string{
		"compile error":  "package user\n\nfunc Trim(row map[string]any) (any, error) {\n\treturn undefinedThing, nil\n}\n#Trim",
		"type error":     "package user\n\nfunc Trim(row map[string]any) (any, error) {\n\tvar n int = \"x\"\n\treturn n, nil\n}\n#Trim",
		"syntax error":   "package user\n\nfunc Trim(row map[string]any) (any, error) {\n#Trim",
		"no package":     "func Trim(row map[string]any) (any, error) { return nil, nil }\n#Trim",
		"wrong type":     "package user\n\nfunc Trim(row map[string]string) string { return \"\" }\n#Trim",
		"no such func":   "package user\n\nfunc Trim(row map[string]any) (any, error) { return nil, nil }\n#Encode",
		"no function":    source("trim")[:strings.LastIndexByte(source("trim"), '#')],
		"bad function":   source("trim") + "-x",
		"missing file":   filepath.Join(t.TempDir(), "none.go.txt#Trim"),
		"unknown import": "package user\n\nimport \"example.com/nothere\"\n\nfunc Trim(row map[string]any) (any, error) { return nothere.X, nil }\n#Trim",
	}
	for what, uri := range bad {
		if _, err := (&Handler{}).Load(uri); err == nil {
			t.Errorf("%s must be a Load error", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if _, err := (&Handler{}).Value(udf.Row{}); err == nil {
		t.Error("Value before Load must be an error")
	}
}
