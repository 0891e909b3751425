package scoring

import (
	"encoding/json"
	"fmt"
	"sync"

	"colo/k8s/nodestate"
)

// Cache holds each node's parsed state, from its NodeInterference object and from its
// node annotation; the object wins when both exist. Documents are parsed once, when they
// change, so that scoring a node is a map lookup.
type Cache struct {
	mu  sync.RWMutex
	crd map[string]entry
	ann map[string]entry
}

type entry struct {
	st  nodestate.State
	err error
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{crd: map[string]entry{}, ann: map[string]entry{}} }

// SetAnnotation records a node's colo.io/interference annotation (present false: none).
func (c *Cache) SetAnnotation(node, value string, present bool) {
	c.set(c.ann, node, []byte(value), present)
}

// SetObject records the spec of a node's NodeInterference object (nil: deleted).
func (c *Cache) SetObject(node string, spec map[string]any) {
	if spec == nil {
		c.set(c.crd, node, nil, false)
		return
	}
	b, err := json.Marshal(spec)
	if err != nil {
		b = []byte(fmt.Sprintf("%q", err.Error()))
	}
	c.set(c.crd, node, b, true)
}

func (c *Cache) set(m map[string]entry, node string, doc []byte, present bool) {
	var e entry
	if present {
		e.st, e.err = nodestate.Parse(doc)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if present {
		m[node] = e
	} else {
		delete(m, node)
	}
}

// Get returns the node's state and where it came from ("" when nothing is published);
// err is the parse error of a published but unusable document.
func (c *Cache) Get(node string) (nodestate.State, string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.crd[node]; ok {
		return e.st, nodestate.Kind + " " + node, e.err
	}
	if e, ok := c.ann[node]; ok {
		return e.st, "annotation " + nodestate.Annotation, e.err
	}
	return nodestate.State{}, "", nil
}
