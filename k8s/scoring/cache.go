package scoring

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"colo/k8s/nodestate"
)

// Cache holds each node's parsed state, from its NodeInterference object and from its
// node annotation; the object wins when both exist. Documents are parsed once, when they
// change, so that scoring a node is a map lookup.
type Cache struct {
	mu  sync.RWMutex
	crd map[string]entry
	ann map[string]entry
	ver map[string]uint64 // per node, bumped on every change
	all atomic.Uint64     // bumped on every change of any node
}

type entry struct {
	st  nodestate.State
	err error
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{crd: map[string]entry{}, ann: map[string]entry{}, ver: map[string]uint64{}}
}

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
	c.ver[node]++
	c.all.Add(1)
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

// Version counts the changes of a node's published state (0: never published).
func (c *Cache) Version(node string) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ver[node]
}

type cached struct {
	gen, ver, all uint64
	until         time.Time // state stale after this (zero: never)
	m             *Model

	mu   sync.Mutex
	memo Memo
}

// Memo is one pod's result on a node, kept between Filter and Score of one cycle.
type Memo struct {
	Key    any // the cycle's pod state
	Socket int
	Cost   float64
	OK     bool
}

// CachedModel returns the node's model, built by view only when the node's generation
// (the scheduler's NodeInfo generation: pods added or removed), its published state, or
// its freshness at now changed since the last build, and the node's memo. Safe for
// concurrent use; no allocation on a hit.
func (s *Scorer) CachedModel(name string, gen int64, now time.Time, view func() NodeView) (*Model, *Memo, *sync.Mutex) {
	all := s.States.all.Load()
	if v, ok := s.models.Load(name); ok {
		c := v.(*cached)
		if c.gen == uint64(gen) && (c.all == all || c.ver == s.States.Version(name)) && (c.until.IsZero() || now.Before(c.until)) {
			return c.m, &c.memo, &c.mu
		}
	}
	c := &cached{gen: uint64(gen), all: all, ver: s.States.Version(name), m: s.BuildModel(view())}
	if st, _, err := s.States.Get(name); err == nil && s.cfg.MaxAge > 0 && c.m != nil {
		c.until = st.Updated.Add(s.cfg.MaxAge)
	}
	s.models.Store(name, c)
	return c.m, &c.memo, &c.mu
}

// LastModel returns the node's most recently built model (nil: none or neutral).
func (s *Scorer) LastModel(name string) *Model {
	if v, ok := s.models.Load(name); ok {
		return v.(*cached).m
	}
	return nil
}

// Reserved returns the socket reserved for a pod.
func (s *Scorer) Reserved(uid types.UID) (int, bool) {
	v, ok := s.reserved.Load(uid)
	if !ok {
		return 0, false
	}
	return v.(int), true
}
