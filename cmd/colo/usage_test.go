package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parents lists every command that has subcommands, whoever added it.
func parents(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.HasSubCommands() {
		out = append(out, c)
	}
	for _, s := range c.Commands() {
		out = append(out, parents(s)...)
	}
	return out
}

// Every unknown subcommand is a usage error (exit 2) naming the command's subcommands; a
// command that only groups others prints its help when called bare (exit 0). Cobra's own
// behaviour was to print the help and exit 0 for `colo resctrl rm X`, `colo machine bogus`…
func TestUnknownSubcommandsExit2(t *testing.T) {
	prepareTree()
	ps := parents(rootCmd)
	if len(ps) < 6 {
		t.Fatalf("found %d parent commands; the tree has at least root, machine, predict, image, probe, resctrl", len(ps))
	}
	for _, p := range ps {
		path := strings.Fields(p.CommandPath())[1:]
		var out, errb bytes.Buffer
		err := execColo(&out, &errb, append(path, "no-such-subcommand")...)
		if code := exitStatus(err, nil, io.Discard); code != 2 {
			t.Errorf("%s no-such-subcommand: exit %d (want 2); stdout %.100q", p.CommandPath(), code, out.String())
			continue
		}
		if p.Annotations["colo.group"] != "true" {
			continue // runs on its own (colo agent): its own argument check answered
		}
		for _, s := range p.Commands() {
			if s.IsAvailableCommand() && !strings.Contains(err.Error(), s.Name()) {
				t.Errorf("%s: the usage error %q does not name its command %s", p.CommandPath(), err, s.Name())
			}
		}
		out.Reset()
		err = execColo(&out, &errb, path...)
		if err != nil || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%s alone: err %v, want its help on stdout; got %.100q", p.CommandPath(), err, out.String())
		}
	}
}
