// Package discovery is how the agent follows a container runtime: a Source sends
// Events (the full list at start-up and after a reconnect, then starts, changes and
// exits) until its context ends. The adapters live in its subpackages (docker, nri,
// process).
package discovery

import (
	"context"
	"time"

	"colo/agent/core"
)

// EventKind is what a discovery event says.
type EventKind int

const (
	// Sync is the full list of running containers (at start-up and after a reconnect):
	// containers not in it are gone.
	Sync EventKind = iota
	// Upsert is a container that started or changed.
	Upsert
	// Gone is a container that exited or was removed.
	Gone
	// Down says the runtime is unreachable (Err); the next Sync says it is back.
	Down
)

// Event is one discovery event.
type Event struct {
	Kind       EventKind
	Containers []core.Container // Sync: all; Upsert: one
	ID         string           // Gone
	Err        error            // Down
}

// Source follows a container runtime. Run sends events until ctx ends, reconnecting
// by itself when the runtime goes away.
type Source interface {
	Name() string
	Run(ctx context.Context, out chan<- Event)
}

// DownThenWait tells the agent that a runtime connection is down (err says why) and waits
// wait before the next attempt; false when ctx ends first. Both discovery sources (Docker,
// NRI) reconnect through it with their own back-off.
func DownThenWait(ctx context.Context, out chan<- Event, err error, wait time.Duration) bool {
	select {
	case out <- Event{Kind: Down, Err: err}:
	case <-ctx.Done():
		return false
	}
	select {
	case <-time.After(wait):
		return true
	case <-ctx.Done():
		return false
	}
}
