package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"colo/resctrl"
)

// Resctrl implements Groups over colo's resctrl client and its platform adapter (the
// same code colo run's linux platform uses).
type Resctrl struct {
	*resctrl.Adapter
	c     *resctrl.Client
	local bool // root is a directory (not an in-process FS): Available checks it
}

// GroupPrefix is the name prefix of an agent instance's groups: "colo-agent.<instance>.".
// It does not start with resctrl.DefaultPrefix, so `colo run` never takes them for its own.
func GroupPrefix(instance string) string { return "colo-agent." + instance + "." }

// OpenResctrl opens the mount at root for the agent instance.
func OpenResctrl(root, instance string) (*Resctrl, error) {
	return NewResctrl(resctrl.New(resctrl.OSFS{Root: root}, resctrl.Options{Prefix: GroupPrefix(instance), AllowDefault: true}), root, true)
}

// NewResctrl wraps a client (an in-process emulator in tests).
func NewResctrl(c *resctrl.Client, root string, local bool) (*Resctrl, error) {
	a, err := resctrl.NewAdapter(c, root)
	if err != nil {
		return nil, err
	}
	return &Resctrl{Adapter: a, c: c, local: local}, nil
}

// SaveDefault implements Groups.
func (r *Resctrl) SaveDefault() (string, error) {
	s, err := r.c.Schemata("")
	if err != nil {
		return "", fmt.Errorf("read system/default schemata: %w", err)
	}
	return s.String(), nil
}

// RestoreDefault implements Groups.
func (r *Resctrl) RestoreDefault(text string) error {
	s, err := resctrl.ParseSchemata(text)
	if err != nil {
		return fmt.Errorf("saved system/default schemata: %w", err)
	}
	return r.c.SetSchemata("", s)
}

// Sweep implements Groups.
func (r *Resctrl) Sweep() ([]string, error) { return r.c.Reconcile(nil) }

// Available implements Groups: the mount still shows its info directory.
func (r *Resctrl) Available() error {
	if !r.local {
		return nil
	}
	if _, err := os.Stat(filepath.Join(r.Root(), "info")); err != nil {
		return fmt.Errorf("resctrl is no longer mounted at %s (%v)", r.Root(), err)
	}
	return nil
}
