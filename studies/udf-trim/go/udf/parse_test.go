package udf

import "testing"

func TestParseRow(t *testing.T) {
	text, err := RowJSON("medium")
	if err != nil {
		t.Fatal(err)
	}
	row, err := ParseRow(text)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := MakeRow("medium")
	a, _ := Canonical(row)
	b, _ := Canonical(want)
	if a != b {
		t.Error("ParseRow(RowJSON) differs from MakeRow")
	}
	for _, bad := range []string{"", "{", "not json", "[1,2]", "null", "42", `"row"`, `{"a":1} {"b":2}`, `{"a":1}x`, "{\"a\":\"\xff\"", `{"a":NaN}`} {
		if row, err := ParseRow([]byte(bad)); err == nil {
			t.Errorf("ParseRow(%q) = %v, want an error", bad, row)
		}
	}
}
