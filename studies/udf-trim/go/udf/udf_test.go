package udf

import (
	"strings"
	"testing"
)

func TestRowSizes(t *testing.T) {
	want := map[string][2]int{"small": {150, 300}, "medium": {1800, 2600}, "large": {18000, 26000}}
	for size, bounds := range want {
		text, err := RowJSON(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) < bounds[0] || len(text) > bounds[1] {
			t.Errorf("%s row is %d bytes, want %d–%d", size, len(text), bounds[0], bounds[1])
		}
	}
	if _, err := MakeRow("huge"); err == nil {
		t.Error("an unknown size must be an error")
	}
}

func TestTrimRemovesTheFiveKeysOnly(t *testing.T) {
	row, _ := MakeRow("small")
	out, err := Trim(row)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range TrimmedKeys {
		if strings.Contains(out.(string), `"`+k+`"`) {
			t.Errorf("%s survived the trim", k)
		}
	}
	if !strings.Contains(out.(string), `"driver_id":"d-48213"`) || len(row) != 12 {
		t.Errorf("trim changed what it should keep: %s (row has %d keys)", out, len(row))
	}
}

func TestCanonicalIgnoresKeyOrderAndSpacing(t *testing.T) {
	a, err := Canonical(`{"b": 1.50, "a": [1, 2], "c": "<&>"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a != `{"a":[1,2],"b":1.5,"c":"<&>"}` {
		t.Errorf("canonical form: %s", a)
	}
	if _, err := Canonical("not json"); err == nil {
		t.Error("non-JSON must be an error")
	}
}
