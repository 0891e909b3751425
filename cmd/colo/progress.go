package main

import (
	"colo/internal/progress"

	"github.com/spf13/cobra"
)

// quiet is the root's --quiet flag: no progress bars (results and errors still print).
var quiet bool

func init() {
	rootCmd.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "no progress bars on stderr (they are drawn only when stderr is a terminal)")
	// Every command reports progress through the package-level progress.Start; the Reporter
	// is made here, after flag parsing, from the command's stderr (a terminal or not).
	cobra.OnInitialize(func() {
		progress.SetDefault(progress.New(rootCmd.ErrOrStderr(), quiet))
	})
}
