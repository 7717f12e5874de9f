//go:build linux

package probe

import (
	"time"

	"golang.org/x/sys/unix"
)

// newClock picks CLOCK_MONOTONIC_RAW when the kernel answers for it (it is not slewed by NTP), and
// falls back to the Go runtime's monotonic clock (CLOCK_MONOTONIC on Linux) when it does not.
func newClock() *clock {
	c := &clock{base: time.Now()}
	var a, b, res unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &a) == nil &&
		unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &b) == nil &&
		b.Nano() >= a.Nano() && a.Nano() > 0 {
		c.raw = true
		c.name = "CLOCK_MONOTONIC_RAW"
		if unix.ClockGetres(unix.CLOCK_MONOTONIC_RAW, &res) == nil {
			c.resolution = float64(res.Nano()) / 1e9
		}
		return c
	}
	c.name = "go monotonic"
	if unix.ClockGetres(unix.CLOCK_MONOTONIC, &res) == nil {
		c.resolution = float64(res.Nano()) / 1e9
	}
	return c
}

// now returns the clock's reading in nanoseconds. It does not allocate. An error from clock_gettime
// cannot happen once newClock has seen the clock work, so it is not checked in the timed region.
func (c *clock) now() int64 {
	if c.raw {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts)
		return ts.Nano()
	}
	return int64(time.Since(c.base))
}

// processCPU returns the CPU time the whole process has used, in nanoseconds (all threads, so the
// garbage collector's work counts), or -1 if the kernel cannot say. It does not allocate.
func processCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return -1
	}
	return ts.Nano()
}
