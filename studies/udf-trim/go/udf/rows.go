package udf

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Sizes are the row sizes of the study: the seed's ~200 B event, and 10× and 100× that, with nesting.
var Sizes = []string{"small", "medium", "large"}

// TrimmedKeys are the keys the Trim workload removes (the seed's key1…key5).
var TrimmedKeys = []string{"key1", "key2", "key3", "key4", "key5"}

// MakeRow builds the row of a size, the same on every call and every machine. Numbers are integers or
// short decimals that every JSON codec prints the same way, so answers compare byte for byte.
func MakeRow(size string) (Row, error) {
	var extra, nested int
	switch size {
	case "small":
		extra, nested = 3, 0
	case "medium":
		extra, nested = 40, 8
	case "large":
		extra, nested = 400, 82
	default:
		return nil, fmt.Errorf("unknown row size %q (want small, medium or large)", size)
	}
	row := Row{
		"event":     "ride.completed",
		"timestamp": 1700000000,
		"driver_id": "d-48213",
		"fare":      12.5,
		"key1":      "remove me",
		"key2":      42,
		"key3":      true,
		"key4":      []any{1, 2, 3},
		"key5":      map[string]any{"a": "b"},
	}
	for i := 0; i < extra; i++ {
		row["field_"+strconv.Itoa(i)] = fmt.Sprintf("value-%03d-%s", i, "abcdefghij"[:i%10+1])
	}
	for i := 0; i < nested; i++ {
		row["stop_"+strconv.Itoa(i)] = map[string]any{
			"lat":   1.25 + float64(i)/4,
			"lon":   103.5 + float64(i)/8,
			"name":  "stop " + strconv.Itoa(i),
			"tags":  []any{"pickup", "dropoff", strconv.Itoa(i)},
			"order": i,
		}
	}
	return normalise(row)
}

// RowJSON is the row as JSON text, how it crosses into mechanisms that take text.
func RowJSON(size string) ([]byte, error) {
	row, err := MakeRow(size)
	if err != nil {
		return nil, err
	}
	return Marshal(row)
}

// normalise round-trips the row through JSON so that it holds only what decoding gives (float64,
// []any, map[string]any): every loader then starts from the same values.
func normalise(row Row) (Row, error) {
	text, err := Marshal(row)
	if err != nil {
		return nil, err
	}
	var out Row
	if err := json.Unmarshal(text, &out); err != nil {
		return nil, err
	}
	return out, nil
}
