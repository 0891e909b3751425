package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"colo/resctrl"

	"github.com/spf13/cobra"
)

// printSet reports a `colo resctrl set`: what was written and what the kernel holds for the
// same resources and domains, read back (the kernel rounds MBA percentages to its
// granularity: MB:0=55 becomes 60 at a 10 % step).
func printSet(cmd *cobra.Command, c *resctrl.Client, p, shown string, wrote resctrl.Schemata, asJSON bool) error {
	oneLine := func(s resctrl.Schemata) string { return strings.TrimSpace(strings.ReplaceAll(s.String(), "\n", " ")) }
	held := wrote
	if cur, err := c.Schemata(p); err == nil {
		if r, err := wrote.Restrict(cur); err == nil {
			held = r
		}
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(w, map[string]string{"group": shown, "wrote": oneLine(wrote), "holds": oneLine(held)})
	}
	if oneLine(held) != oneLine(wrote) {
		_, err := fmt.Fprintf(w, "%s: wrote %s; the kernel holds %s (rounded to what the hardware supports)\n", shown, oneLine(wrote), oneLine(held))
		return err
	}
	_, err := fmt.Fprintf(w, "%s: wrote %s\n", shown, oneLine(held))
	return err
}

// prepareMount checks --mount DIR for `colo resctrl emulate`: a missing directory is created
// (said on msg), a stale FUSE mount left by a killed emulator (ENOTCONN) is explained with
// its fix, anything else that is not a directory is bad input.
func prepareMount(dir string, msg io.Writer) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return badInputf("--mount %s: a stale mount left by an emulator that was killed; unmount it with `fusermount3 -u %s` (`fusermount -u` with FUSE 2) and try again", dir, dir)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return badInputf("--mount %s: does not exist and cannot be created: %v", dir, err)
		}
		fmt.Fprintf(msg, "colo: created %s for the mount\n", dir)
		return nil
	case err != nil:
		return badInputf("--mount %s: %v", dir, err)
	case !st.IsDir():
		return badInputf("--mount %s: not a directory", dir)
	}
	return nil
}
