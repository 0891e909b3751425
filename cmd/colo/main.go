// Command colo is interference-aware co-location for multi-tenant Linux servers.
//
// Every subcommand lives in its own file of this package and registers itself on
// rootCmd from an init function; commands only parse flags and call packages.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at link time: go build -ldflags "-X main.version=v0.1.0".
var version = "dev"

var rootCmd = &cobra.Command{
	Use:   "colo",
	Short: "Interference-aware co-location: cache/bandwidth partitioning, profiling, prediction, scheduling",
	Long: `colo watches co-located workloads through hardware counters and RDT monitoring,
partitions the last-level cache (CAT) and memory bandwidth (MBA) through resctrl,
profiles how sensitive and how noisy each workload is, predicts co-location
slowdown and schedules jobs accordingly.

Without RDT or a hardware PMU (a VM, a laptop) colo runs on its simulated testbed,
whose resctrl state is held by a validating emulator of the kernel's filesystem.`,
	Example: `  colo run examples/thesis/high-utilization.yaml --compare least-loaded,dynamic
  colo report runs/<dir>
  colo eval --machine skx-6138 --workload sphinx306,lbm06,libquantum06,applu00,soplex06,milc06 \
      --masks 0x600,0x180,0x40,0x20,0x1e,0x1 --bw-model stalls --max-bw 35000
  colo partition --workloads data/pbbcache-skylake/workloads.csv --policy ucp,lfoc+,optc-unf
  colo compare examples/dcat/fig15-mlr-mload.yaml
  colo predict validate --json
  colo doctor`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// usageError marks an error caused by bad input (flags, files, values): exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badInput wraps err so that colo exits with code 2.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// badInputf formats a bad-input error (exit code 2).
func badInputf(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func main() {
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	prepareTree()
	ctx, stop := intr.watch(context.Background())
	c, err := rootCmd.ExecuteContextC(ctx)
	stop()
	sig := intr.signalled()
	if err == nil && normalStop(c) {
		sig = nil // a daemon stopped as asked
	}
	if code := exitStatus(err, sig, os.Stderr); code != 0 {
		os.Exit(code)
	}
}
