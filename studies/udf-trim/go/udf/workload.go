package udf

import "fmt"

// Workloads of the study: what the user's code computes for each row.
var Workloads = []string{"trim", "encode"}

// Trim removes key1…key5 and returns the rest as JSON text (the seed's Trim benchmark).
func Trim(row Row) (any, error) {
	out := make(Row, len(row))
	for k, v := range row {
		out[k] = v
	}
	for _, k := range TrimmedKeys {
		delete(out, k)
	}
	text, err := Marshal(out)
	return string(text), err
}

// Encode returns the row as JSON text (the seed's other example: a JSON data column).
func Encode(row Row) (any, error) {
	text, err := Marshal(row)
	return string(text), err
}

// Native returns the Go function of a workload.
func Native(workload string) (func(Row) (any, error), error) {
	switch workload {
	case "trim":
		return Trim, nil
	case "encode":
		return Encode, nil
	}
	return nil, fmt.Errorf("unknown workload %q (want trim or encode)", workload)
}
