package udf

import (
	"errors"
	"sync"
	"testing"
)

type resource struct{ freed bool }

func TestPoolMakesOnDemandUpToItsSizeAndReuses(t *testing.T) {
	made := 0
	p := NewPool(2, &resource{}, func() (*resource, error) { made++; return &resource{}, nil }, func(r *resource) {
		r.freed = true
	})
	a, _ := p.Get()
	b, _ := p.Get() // the second slot was empty: made now
	if made != 1 || a == b {
		t.Fatalf("made %d, want 1 (the first was given)", made)
	}
	p.Put(a)
	c, _ := p.Get()
	if c != a || made != 1 {
		t.Error("a returned resource must be reused, not remade")
	}
	p.Put(nil) // c discarded: its slot is room for a new one
	d, _ := p.Get()
	if d == c || made != 2 {
		t.Error("a discarded resource's slot must make a new one")
	}
	p.Put(b)
	p.Put(d)
}

func TestPoolCloseFreesIdleAndLateResourcesAndWakesWaiters(t *testing.T) {
	var mu sync.Mutex
	freed := 0
	p := NewPool(1, &resource{}, func() (*resource, error) { return &resource{}, nil }, func(*resource) {
		mu.Lock()
		freed++
		mu.Unlock()
	})
	inUse, _ := p.Get()
	waiter := make(chan error)
	go func() { _, err := p.Get(); waiter <- err }() // waits: the only slot is taken
	p.Close()
	p.Close() // twice is harmless
	p.Put(inUse)
	if err := <-waiter; !errors.Is(err, ErrClosed) {
		t.Errorf("a waiter must wake with ErrClosed, got %v", err)
	}
	if freed != 1 {
		t.Errorf("freed %d, want the one in use freed when given back", freed)
	}
	if _, err := p.Get(); !errors.Is(err, ErrClosed) {
		t.Error("Get after Close must fail")
	}
}

func TestPoolMakeErrorKeepsTheSlot(t *testing.T) {
	fail := true
	p := NewPool(1, nil, func() (*resource, error) {
		if fail {
			return nil, errors.New("cannot make")
		}
		return &resource{}, nil
	}, func(*resource) {})
	if _, err := p.Get(); err == nil {
		t.Fatal("the make error must come back")
	}
	fail = false
	if r, err := p.Get(); err != nil || r == nil { // the slot was not lost
		t.Fatalf("got %v, %v", r, err)
	}
}
