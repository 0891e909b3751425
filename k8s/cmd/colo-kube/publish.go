package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/profilecrd"
	"colo/k8s/publish"
	"colo/tenantprofile"
)

func publishCmd() *cobra.Command {
	var (
		kubeconfig, node, agent, profiles string
		residents, mapping                []string
		interval                          time.Duration
		closids                           int
		noAnn, noObj, dry                 bool
	)
	cmd := &cobra.Command{
		Use:   "publish --node NAME (--agent URL | --resident NAME=PROFILE[:CLASS[:TARGET]]...)",
		Short: "Publish a node's interference state (NodeInterference object and node annotation)",
		Example: `  colo-kube publish --node "$NODE_NAME" --agent http://127.0.0.1:9464 --interval 30s
  colo-kube publish --node n1 --resident db=605.mcf_s:priority:0.9 --resident etl=619.lbm_s --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node == "" {
				return usage("--node is required (the Kubernetes node name)")
			}
			if (agent == "") == (len(residents) == 0) {
				return usage("give exactly one of --agent URL and --resident ...")
			}
			lib, err := placement.LoadLibrary(profiles)
			if err != nil {
				return usageError{err}
			}
			maps := map[string]string{}
			for _, m := range mapping {
				k, v, ok := strings.Cut(m, "=")
				if !ok {
					return usage("--profile-of %q: want CONTAINER=PROFILE", m)
				}
				maps[k] = v
			}
			var static []nodestate.Resident
			for _, r := range residents {
				res, err := publish.ParseResident(lib, r)
				if err != nil {
					return usageError{err}
				}
				static = append(static, res)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			build := func() (nodestate.State, error) {
				now := time.Now()
				if agent == "" {
					return nodestate.State{FormatVersion: nodestate.FormatVersion, Node: node, Updated: now.UTC(), Source: "static; profiles " + lib.Source, DialsMB: lib.Dials, Residents: static}, nil
				}
				st, err := publish.FetchAgent(ctx, agent)
				if err != nil {
					return nodestate.State{}, err
				}
				return publish.FromAgent(st, lib, node, maps, closids, now), nil
			}
			var w publish.Writer
			if !dry {
				cfg, err := restConfig(kubeconfig)
				if err != nil {
					return err
				}
				w.Annotation, w.Object = !noAnn, !noObj
				if w.Client, err = kubernetes.NewForConfig(cfg); err != nil {
					return err
				}
				if w.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
					return err
				}
			}
			for {
				st, err := build()
				if err == nil {
					publish.SortResidents(&st)
					if dry {
						var b []byte
						if b, err = nodestate.Marshal(st); err == nil {
							fmt.Fprintln(cmd.OutOrStdout(), string(b))
						}
					} else {
						err = w.Write(ctx, st)
					}
				}
				if err == nil && agent != "" && !dry {
					// the agent's online profiles become ColoProfile objects
					var ps []tenantprofile.Profile
					if ps, err = profilecrd.FetchAgent(ctx, agent); err == nil {
						err = profilecrd.Apply(ctx, w.Dynamic, ps)
					}
				}
				if err != nil {
					if interval == 0 {
						return err
					}
					fmt.Fprintf(os.Stderr, "colo-kube publish: %v (retrying in %s)\n", err, interval)
				}
				if interval == 0 {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG)")
	f.StringVar(&node, "node", os.Getenv("NODE_NAME"), "node name (default $NODE_NAME)")
	f.StringVar(&agent, "agent", "", "base URL of the colo agent's API (reads /api/v1/status)")
	f.StringVar(&profiles, "profiles", "", "colo predict data directory with the profiles (default: embedded SPEC CPU2017)")
	f.StringArrayVar(&residents, "resident", nil, "static resident NAME=PROFILE[:CLASS[:TARGET]] (repeatable)")
	f.StringArrayVar(&mapping, "profile-of", nil, "CONTAINER=PROFILE: the profile of an agent container (repeatable)")
	f.DurationVar(&interval, "interval", 0, "republish every DUR (0: once)")
	f.IntVar(&closids, "closids", 16, "CLOSIDs of the platform (resctrl info/L3/num_closids)")
	f.BoolVar(&noAnn, "no-annotation", false, "do not write the node annotation")
	f.BoolVar(&noObj, "no-object", false, "do not write the NodeInterference object")
	f.BoolVar(&dry, "dry-run", false, "print the document instead of writing it")
	return cmd
}
