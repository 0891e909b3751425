// Package registry is a table of named factories filled from init functions: the
// schedulers (sched.Register) and the platforms (bench.RegisterPlatform).
package registry

import (
	"maps"
	"slices"
	"sync"
)

// Registry maps names to values of type F. Its methods are safe for concurrent use.
type Registry[F any] struct {
	what string // "sched: scheduler": names the kind in the panic of a second registration
	mu   sync.RWMutex
	m    map[string]F
}

// New returns an empty registry of what (e.g. "bench: platform").
func New[F any](what string) *Registry[F] { return &Registry[F]{what: what, m: map[string]F{}} }

// Register adds f under name; registering a name twice panics (a programming error).
func (r *Registry[F]) Register(name string, f F) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(r.what + " " + name + " registered twice")
	}
	r.m[name] = f
}

// Get returns the value registered under name.
func (r *Registry[F]) Get(name string) (F, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	return f, ok
}

// Names lists the registered names, sorted.
func (r *Registry[F]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}
