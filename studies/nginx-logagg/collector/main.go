// Command collector receives the log lines nginx's log_by_lua ships over a unix datagram socket and counts
// them per key, as the Cloudflare post's aggregation server did on its own port.
//
//	collector LINES.sock TOTALS.sock
//
// Each datagram is one request: "STATUS PATH CLIENT". A connection to TOTALS.sock is answered with the
// counts so far as one JSON object, {"status": {...}, "path": {...}, "client": {...}, "bad": N}, and closed.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
)

type counts struct {
	mu     sync.Mutex
	groups map[string]map[string]int64
	bad    int64 // datagrams that were not three fields
}

func (c *counts) add(line string) {
	fields := strings.Fields(line)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(fields) != 3 {
		c.bad++
		return
	}
	for i, group := range []string{"status", "path", "client"} {
		c.groups[group][fields[i]]++
	}
}

func (c *counts) snapshot() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]any{"bad": c.bad}
	for group, keys := range c.groups {
		out[group] = keys
	}
	return json.Marshal(out)
}

func run(linesPath, totalsPath string) error {
	c := &counts{groups: map[string]map[string]int64{"status": {}, "path": {}, "client": {}}}
	lines, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: linesPath, Net: "unixgram"})
	if err != nil {
		return err
	}
	totals, err := net.Listen("unix", totalsPath)
	if err != nil {
		return err
	}
	go func() {
		for {
			conn, err := totals.Accept()
			if err != nil {
				return
			}
			if body, err := c.snapshot(); err == nil {
				_, _ = conn.Write(body)
			}
			_ = conn.Close()
		}
	}()
	buf := make([]byte, 65536)
	for {
		n, _, err := lines.ReadFromUnix(buf)
		if err != nil {
			return err
		}
		c.add(string(buf[:n]))
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: collector LINES.sock TOTALS.sock")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "collector:", err)
		os.Exit(1)
	}
}
