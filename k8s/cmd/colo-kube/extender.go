package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"colo/k8s/extender"
	"colo/k8s/placement"
	"colo/k8s/profilecrd"
	"colo/k8s/scoring"
)

func extenderCmd() *cobra.Command {
	var (
		kubeconfig, listen, profiles string
		seed                         uint64
		maxAge                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "extender",
		Short: "Serve colo's filter and scores as a kube-scheduler extender (POST /filter, /prioritize)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lib, err := placement.LoadLibrary(profiles)
			if err != nil {
				return usageError{err}
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			dc, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
			ix := &profilecrd.Index{}
			go ix.Run(ctx, dc, 10*time.Second, logf)
			s := scoring.New(lib, scoring.Config{Seed: seed, MaxAge: maxAge, Logf: logf, Profiles: ix})
			srv, err := extender.Start(ctx, cs, dc, s, logf)
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			logf("colo-kube extender: listening on %s (%d profiles from %s)", l.Addr(), len(lib.Profiles), lib.Source)
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { <-ctx.Done(); hs.Close() }()
			if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then $KUBECONFIG)")
	f.StringVar(&listen, "listen", "127.0.0.1:8888", "address to serve on")
	f.StringVar(&profiles, "profiles", "", "colo predict data directory (default: embedded SPEC CPU2017)")
	f.Uint64Var(&seed, "seed", 0, "tie-breaking seed")
	f.DurationVar(&maxAge, "max-age", 5*time.Minute, "node state older than this scores neutrally (0: never)")
	return cmd
}
