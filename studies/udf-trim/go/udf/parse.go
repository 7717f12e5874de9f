package udf

import (
	"encoding/json"
	"fmt"
)

// ParseRow decodes one row from JSON text. The text must be one JSON object; numbers decode to float64,
// as MakeRow gives them. Anything else (bad JSON, an array, null, trailing data) is an error.
func ParseRow(text []byte) (Row, error) {
	var row Row
	if err := json.Unmarshal(text, &row); err != nil {
		return nil, fmt.Errorf("row is not a JSON object: %w", err)
	}
	if row == nil {
		return nil, fmt.Errorf("row is not a JSON object: null")
	}
	return row, nil
}
