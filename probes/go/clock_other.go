//go:build !linux

package probe

import "time"

// newClock uses the Go runtime's monotonic clock: CLOCK_MONOTONIC_RAW is a Linux clock.
// The resolution is not known portably and is reported as 0.
func newClock() *clock {
	return &clock{base: time.Now(), name: "go monotonic"}
}

// now returns nanoseconds since the clock was made. It does not allocate.
func (c *clock) now() int64 {
	return int64(time.Since(c.base))
}

// processCPU is not available portably: -1, and the probe reports no CPU counter.
func processCPU() int64 { return -1 }
