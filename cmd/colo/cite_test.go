package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help texts cite what a user of a clone has: docs in the repository (which must exist)
// and papers by title, never the session's seed notes (seed00N.md) or Go identifiers.
func TestHelpCitesWhatAUserHas(t *testing.T) {
	prepareTree()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := c.Short + "\n" + c.Long + "\n" + c.Example
		c.Flags().VisitAll(func(f *pflag.Flag) { text += "\n" + f.Usage })
		if m := regexp.MustCompile(`seed\d+\.md|\bmetric\.[A-Z]\w+`).FindString(text); m != "" {
			t.Errorf("%s cites %s, which a user does not have", c.CommandPath(), m)
		}
		for _, m := range regexp.MustCompile(`(?:docs|data)/[\w./-]+\.md`).FindAllString(text, -1) {
			if _, err := os.Stat("../../" + strings.TrimSuffix(m, ".")); err != nil {
				t.Errorf("%s cites %s, which the repository does not have", c.CommandPath(), m)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(rootCmd)
}
