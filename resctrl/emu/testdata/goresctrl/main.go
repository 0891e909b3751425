// Command goresctrl configures classes of service through intel/goresctrl's pkg/rdt,
// unmodified, on whatever resctrl mount /proc/mounts names: a third-party client for
// colo's emulator (resctrl/emu's TestGoresctrlAgainstEmulator builds and runs it). It is
// a module of its own so that colo's go.mod does not take goresctrl's dependencies.
//
// It prints one line per class: its name and its schemata as goresctrl reads them back.
package main

import (
	"fmt"
	"os"

	"github.com/intel/goresctrl/pkg/rdt"
)

const config = `
partitions:
  default:
    l3Allocation: "100%"
    classes:
      gold:
        l3Allocation: "50%"
      bronze:
        l3Allocation: "25%"
`

func main() {
	if err := rdt.Initialize("goresctrl."); err != nil {
		fmt.Fprintln(os.Stderr, "initialize:", err)
		os.Exit(1)
	}
	if err := rdt.SetConfigFromData([]byte(config), true); err != nil {
		fmt.Fprintln(os.Stderr, "set config:", err)
		os.Exit(1)
	}
	for _, c := range rdt.GetClasses() {
		fmt.Println(c.Name())
	}
}
