package probe

// callgrindRequest is in count_amd64.s.
//
//go:noescape
func callgrindRequest(args *[6]uint64) uint64
