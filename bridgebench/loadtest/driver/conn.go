package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection with one request in flight at a time. Requests are written
// pre-serialised and responses are read with a small parser (status line, headers, a Content-Length or
// chunked body): net/http's client costs too much per request to drive a server at tens of thousands of
// requests a second from one core.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
}

func dial(addr string, deadline time.Time) (*conn, error) {
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	return &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (c *conn) close() {
	if c.c != nil {
		_ = c.c.Close()
	}
}

// errKind names an error for the report's "errors by kind".
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	case strings.Contains(err.Error(), "connection refused"):
		return "refused"
	case strings.Contains(err.Error(), "connection reset"):
		return "reset"
	case errors.Is(err, errProtocol):
		return "protocol"
	}
	return "other"
}

var errProtocol = errors.New("malformed HTTP response")

// roundTrip writes one request and reads its response; it returns the status code. The connection must be
// closed after an error. keepAlive is false when the server said it will close the connection.
func (c *conn) roundTrip(request []byte, deadline time.Time) (status int, keepAlive bool, err error) {
	if err = c.c.SetDeadline(deadline); err != nil {
		return 0, false, err
	}
	if _, err = c.c.Write(request); err != nil {
		return 0, false, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || string(line[:5]) != "HTTP/" {
		return 0, false, fmt.Errorf("%w: status line %q", errProtocol, truncate(line))
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("%w: status line %q", errProtocol, truncate(line))
	}
	keepAlive = string(line[5:8]) == "1.1"
	length, chunked := -1, false
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		if len(line) <= 2 {
			break
		}
		name, value, ok := strings.Cut(strings.TrimRight(string(line), "\r\n"), ":")
		if !ok {
			return 0, false, fmt.Errorf("%w: header %q", errProtocol, truncate(line))
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			if length, err = strconv.Atoi(value); err != nil || length < 0 {
				return 0, false, fmt.Errorf("%w: content-length %q", errProtocol, value)
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		case "connection":
			if strings.EqualFold(value, "close") {
				keepAlive = false
			} else if strings.EqualFold(value, "keep-alive") {
				keepAlive = true
			}
		}
	}
	switch {
	case chunked:
		err = c.skipChunked()
	case length >= 0:
		_, err = c.r.Discard(length)
	case status == 204 || status == 304 || status/100 == 1:
	default: // no length: the body ends when the server closes
		_, err = io.Copy(io.Discard, c.r)
		keepAlive = false
	}
	return status, keepAlive, err
}

func (c *conn) skipChunked() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(string(line), ";", 2)[0]), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("%w: chunk size %q", errProtocol, truncate(line))
		}
		if size == 0 { // trailers end with an empty line
			for {
				line, err = c.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(line) <= 2 {
					return nil
				}
			}
		}
		if _, err = c.r.Discard(int(size) + 2); err != nil {
			return err
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}
