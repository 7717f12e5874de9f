package probe_test

import (
	"strconv"
	"strings"

	"bridgebench/probe"
)

// A benchmark program is a main package that calls probe.Main with its Setup. Run as
// `trim-native 1000 "  some row  " auto`, it prints one bridgebench/1 JSON line.
func ExampleMain() {
	probe.Main(func(param string) (probe.Op, func(), error) {
		row := param // built once, before timing
		op := func() (string, error) {
			return strconv.Itoa(len(strings.TrimSpace(row))), nil
		}
		return op, nil, nil
	})
}
