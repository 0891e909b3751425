package main

import (
	"colo/agent/api"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	var addr string
	var every time.Duration
	var count int
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Live table of a running colo agent's containers (like top / pqos -m)",
		Long: `colo top asks a running colo agent (its JSON API) every --interval and redraws a
table: container, class, socket, L3 ways/mask, MBA, LLC occupancy, memory bandwidth,
CPU, IPC(E) where a hardware PMU measures them, how it is monitored and its probe.`,
		Example: `  colo top
  colo top --addr 127.0.0.1:9464 -n 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < 20*time.Millisecond {
				return badInputf("--interval %v: at least 20ms", every)
			}
			out := cmd.OutOrStdout()
			tty := false
			if f, ok := out.(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					tty = true
				}
			}
			for i := 0; count <= 0 || i < count; i++ {
				if i > 0 {
					select {
					case <-cmd.Context().Done():
						return nil
					case <-time.After(every):
					}
				}
				st, _, err := fetchStatus(addr)
				if err != nil {
					return err
				}
				if tty {
					fmt.Fprint(out, "\x1b[H\x1b[2J")
				}
				if err := writeTop(out, st); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "the agent's --listen address")
	cmd.Flags().DurationVar(&every, "interval", time.Second, "refresh period")
	cmd.Flags().IntVarP(&count, "iterations", "n", 0, "stop after N refreshes (0: until interrupted)")
	cmd.Annotations = signalIsStop // interactive until Ctrl-C: exit 0
	rootCmd.AddCommand(cmd)
}

func human(b *float64) string {
	if b == nil {
		return "-"
	}
	v := *b
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1fG", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1fM", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.0fK", v/(1<<10))
	}
	return fmt.Sprintf("%.0f", v)
}

func num(v *float64, f string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(f, *v)
}

// writeTop prints an agent's status as colo top's table.
func writeTop(w io.Writer, st api.Status) error {
	conn := "connected"
	if !st.RuntimeConnected {
		conn = "DISCONNECTED " + st.RuntimeError
	}
	rdt := st.ResctrlRoot
	if st.ResctrlError != "" {
		rdt += " (UNAVAILABLE: " + st.ResctrlError + ")"
	}
	var defs []string
	for s := 0; s < st.Sockets; s++ {
		defs = append(defs, fmt.Sprintf("%d:%s", s, st.DefaultMasks[fmt.Sprint(s)]))
	}
	fmt.Fprintf(w, "colo agent %s  policy %s  interval %s  %s %s  resctrl %s\n", st.Instance, st.Policy, st.Interval, st.Runtime, conn, rdt)
	fmt.Fprintf(w, "machine %s (%d sockets, %d ways)  system/default %s  containers %d  tick %.1f ms  %s\n\n",
		st.Machine, st.Sockets, st.LLCWays, strings.Join(defs, " "), len(st.Containers), st.TickSeconds*1e3, st.Updated.Format("15:04:05"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tCLASS\tSTATE\tSKT\tWAYS\tMASK\tMBA\tLLC OCC\tMEM BW MB/s\tCPU\tIPC\tIPCE\tSLOWDOWN\tMON\tPROBE")
	for _, c := range st.Containers {
		mask, ways, mba := "default", "-", "-"
		if c.Mask != "" {
			mask, ways = c.Mask, fmt.Sprint(c.Ways)
		}
		if c.MBA > 0 {
			mba = fmt.Sprint(c.MBA)
		}
		ipce := num(c.IPCE, "%.2f")
		if c.IPC == nil {
			ipce = "n/a(" + c.Counters + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Request.Class, c.State, c.Socket,
			ways, mask, mba, human(c.LLCOccupancyBytes), num(c.MemBandwidthMBps, "%.1f"), c.CPUCores,
			num(c.IPC, "%.2f"), ipce, num(c.PredictedSlowdown, "%.2fx"), c.Monitoring, c.Probe)
	}
	return tw.Flush()
}
