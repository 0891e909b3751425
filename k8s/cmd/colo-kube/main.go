// Command colo-kube is colo's Kubernetes side: `publish` writes a node's interference state
// (NodeInterference object and node annotation), `extender` serves the placement logic as
// a kube-scheduler extender, `experiment` runs the kwok placement experiment. The
// scheduler plugin itself is in colo-kube-scheduler.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// usageError is bad input: exit 2.
type usageError struct{ error }

func usage(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes the command line and returns the exit code: 0 success, 1 runtime failure,
// 2 bad input (flags, arguments, files).
func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "colo-kube", Short: "colo's interference-aware placement for Kubernetes", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(publishCmd(), extenderCmd(), experimentCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "colo-kube:", err)
		var u usageError
		if errors.As(err, &u) || isFlagError(err) {
			return 2
		}
		return 1
	}
	return 0
}

func isFlagError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "invalid argument", "flag needs an argument", "unknown command", "accepts "} {
		if len(s) >= len(p) && (s[:len(p)] == p) {
			return true
		}
	}
	return false
}
