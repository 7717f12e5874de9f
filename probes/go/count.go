package probe

// Callgrind's requests (valgrind/callgrind.h: VG_USERREQ_TOOL_BASE('C','T'), then in order DUMP_STATS,
// ZERO_STATS). The probe zeroes the counters before each iteration and dumps them after it, so that under
// `bridgebench run --metric instructions` callgrind writes one part an iteration; outside valgrind each
// request is a few instructions that do nothing.
const (
	callgrindDumpStats = uint64('C')<<24 | uint64('T')<<16
	callgrindZeroStats = callgrindDumpStats + 1
)

func countStart() {
	args := [6]uint64{callgrindZeroStats}
	callgrindRequest(&args)
}

func countStop() {
	args := [6]uint64{callgrindDumpStats}
	callgrindRequest(&args)
}
