package resctrl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"colo/machine"
)

// View is one group as `colo resctrl ls` and `show` present it.
type View struct {
	Group
	Mode     string      `json:"mode,omitempty"`
	Schemata string      `json:"schemata,omitempty"`
	Tasks    []int       `json:"tasks"`
	CPUs     []int       `json:"cpus"`
	Mon      []MonDomain `json:"mon_data,omitempty"`
}

// View reads one group: tasks, CPUs, and for a CTRL_MON group its schemata (one line)
// and mode; withMon adds its monitoring counters.
func (c *Client) View(g Group, withMon bool) (View, error) {
	v := View{Group: g}
	var err error
	if v.Tasks, err = c.Tasks(g.Path); err != nil {
		return v, err
	}
	if v.CPUs, err = c.CPUs(g.Path); err != nil {
		return v, err
	}
	if !g.Mon {
		s, err := c.Schemata(g.Path)
		if err != nil {
			return v, err
		}
		v.Schemata = strings.TrimSuffix(strings.ReplaceAll(s.String(), "\n", " "), " ")
		if v.Mode, err = c.Mode(g.Path); err != nil {
			return v, err
		}
	}
	if withMon {
		v.Mon, _ = c.MonData(g.Path)
	}
	return v, nil
}

// List reads every group (Groups order) without monitoring counters: the tree `colo
// resctrl ls` prints, and the one the sim/linux conformance replay compares.
func (c *Client) List() ([]View, error) {
	gs, err := c.Groups()
	if err != nil {
		return nil, err
	}
	vs := make([]View, 0, len(gs))
	for _, g := range gs {
		v, err := c.View(g, false)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// GroupName is a group path as shown to people ("/ (default)" for the default group).
func GroupName(p string) string {
	if p == "" {
		return "/ (default)"
	}
	return p
}

// WriteList prints the table of `colo resctrl ls`: group, kind, owner, mode, task
// count, CPUs and schemata.
func WriteList(w io.Writer, vs []View) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tKIND\tOWNER\tMODE\tTASKS\tCPUS\tSCHEMATA")
	for _, v := range vs {
		kind, owner := "ctrl_mon", "other"
		if v.Group.Mon {
			kind = "mon"
		}
		if v.Owned {
			owner = "colo"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", GroupName(v.Path), kind, owner, v.Mode, len(v.Tasks), machine.FormatCPUList(v.CPUs), v.Schemata)
	}
	return tw.Flush()
}
