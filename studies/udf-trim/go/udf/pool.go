package udf

import (
	"errors"
	"sync/atomic"
)

// ErrClosed is what a closed handler's calls return.
var ErrClosed = errors.New("handler closed")

// Pool lends at most a fixed number of resources (Lua states, wasm instances) one call at a time, making
// them on demand and keeping them for reuse. Each slot holds a free resource, or nil: room to make one.
// A resource a call had to discard (after a timeout, say) is given back as nil.
type Pool[T any] struct {
	slots  chan *T
	newT   func() (*T, error)
	free   func(*T)
	closed atomic.Bool
}

// NewPool makes a pool of size slots; first (already made, so Load can report its errors) fills one.
func NewPool[T any](size int, first *T, newT func() (*T, error), free func(*T)) *Pool[T] {
	p := &Pool[T]{slots: make(chan *T, size), newT: newT, free: free}
	p.slots <- first
	for i := 1; i < size; i++ {
		p.slots <- nil
	}
	return p
}

// Get takes a free resource, or makes one if there is room, or waits for one.
func (p *Pool[T]) Get() (*T, error) {
	r := <-p.slots
	if p.closed.Load() {
		p.Put(r)
		return nil, ErrClosed
	}
	if r != nil {
		return r, nil
	}
	r, err := p.newT()
	if err != nil {
		p.slots <- nil
		return nil, err
	}
	return r, nil
}

// Put gives a resource back (nil: it was discarded). After Close, it is freed instead.
func (p *Pool[T]) Put(r *T) {
	if r != nil && p.closed.Load() {
		p.free(r)
		r = nil
	}
	p.slots <- r
}

// Close frees the resources not in use; those in use are freed when their calls give them back. Calls
// waiting in Get wake up and return ErrClosed. Closing twice does nothing.
func (p *Pool[T]) Close() {
	if p.closed.Swap(true) {
		return
	}
	for range cap(p.slots) {
		select {
		case r := <-p.slots:
			if r != nil {
				p.free(r)
			}
			defer func() { p.slots <- nil }()
		default:
		}
	}
}
