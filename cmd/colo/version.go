package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// buildDate is set at link time: go build -ldflags "-X main.buildDate=$(date -u +%FT%TZ)".
var buildDate string

// versionInfo is `colo version --json`: the version set at link time; the commit and its
// date the Go toolchain stamps into the binary (vcs.revision, vcs.time; empty for a build
// outside a git checkout or with -buildvcs=false); the build date: main.buildDate when
// set at link time, else when the binary was written (its modification time).
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Modified   bool   `json:"modified"`
	CommitDate string `json:"commit_date"`
	BuildDate  string `json:"build_date"`
	GoVersion  string `json:"go_version"`
	Platform   string `json:"platform"`
}

// binaryDate is when the running binary was written (UTC, RFC 3339), "" if unknown.
func binaryDate() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return st.ModTime().UTC().Format(time.RFC3339)
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, BuildDate: buildDate}
	if v.BuildDate == "" {
		v.BuildDate = binaryDate()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitDate = s.Value
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
