package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is `colo version --json`: the version set at link time, and the commit and
// build date the Go toolchain stamps into the binary (vcs.revision, vcs.time; empty for a
// build outside a git checkout or with -buildvcs=false).
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.BuildDate = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version // go install colo/cmd/colo@vX
		}
	}
	return v
}

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print colo's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			commit, date := v.Commit, v.BuildDate
			if commit == "" {
				commit = "unknown commit"
			} else if len(commit) > 12 {
				commit = commit[:12]
			}
			if v.Modified {
				commit += "+modified"
			}
			if date == "" {
				date = "unknown build date"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "colo %s (%s, %s, %s, %s)\n", v.Version, commit, date, v.GoVersion, v.Platform)
			return nil
		},
	}
	jsonFlag(cmd.Flags(), &asJSON)
	rootCmd.AddCommand(cmd)
}
