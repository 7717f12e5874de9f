package udf

import (
	"fmt"
	"sort"
	"sync"
)

var (
	mu      sync.Mutex
	loaders = map[string]func() Handler{}
)

// Register makes a loader available by its mechanism name (from an init function of its package).
func Register(name string, newHandler func() Handler) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := loaders[name]; dup {
		panic("udf: loader registered twice: " + name)
	}
	loaders[name] = newHandler
}

// Lookup returns a new, unloaded handler of a mechanism.
func Lookup(name string) (Handler, error) {
	mu.Lock()
	defer mu.Unlock()
	if newHandler, ok := loaders[name]; ok {
		return newHandler(), nil
	}
	return nil, fmt.Errorf("no loader %q in this binary (has: %v)", name, namesLocked())
}

// Names lists the registered mechanisms.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(loaders))
	for n := range loaders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
