package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/emu"

	"github.com/spf13/cobra"
)

func init() {
	var root string
	var asJSON, foreign bool
	rc := &cobra.Command{
		Use:   "resctrl",
		Short: "Inspect and change resctrl (CAT/MBA groups), or mount the resctrl emulator",
		Long: `Reads and writes the kernel's resctrl filesystem: what the platform supports, the
control (CTRL_MON) and monitoring (MON) groups, their schemata, tasks and counters.

The root is --root, else $COLO_RESCTRL_ROOT, else /sys/fs/resctrl. Without RDT (a VM,
a laptop) mount the validating emulator and point --root at it:

  colo resctrl emulate --profile intel --mount /tmp/resctrl &
  colo resctrl --root /tmp/resctrl info

Changes (set, assign) apply only to colo's own groups (names starting with "colo.")
unless --foreign is given.`,
	}
	rc.PersistentFlags().StringVar(&root, "root", "", "resctrl mount (default $"+resctrl.EnvRoot+" or "+resctrl.DefaultRoot+")")
	// --resctrl-root as in colo run and colo doctor, so that one spelling works everywhere
	rc.PersistentFlags().StringVar(&root, "resctrl-root", "", "the same as --root")
	rc.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	client := func() *resctrl.Client {
		return resctrl.Open(root, resctrl.Options{AllowForeign: foreign})
	}
	out := func(cmd *cobra.Command, v any, human func(w io.Writer) error) error {
		if asJSON {
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		return human(cmd.OutOrStdout())
	}
	group := func(arg string) (string, error) {
		if arg == "/" || arg == "." || arg == "default" {
			return "", nil
		}
		if _, _, err := resctrl.SplitGroup(arg); err != nil {
			return "", badInput(err)
		}
		return strings.Trim(arg, "/"), nil
	}

	info := &cobra.Command{
		Use:   "info",
		Short: "What the resctrl mount supports (resources, masks, MBA, monitoring, CLOSIDs, RMIDs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := client().Info()
			if err != nil {
				return err
			}
			return out(cmd, in, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RESOURCE\tCLOSIDS\tDETAILS")
				for _, r := range in.Resources {
					if r.Cache {
						fmt.Fprintf(tw, "%s\t%d\tcbm_mask=%x (%d ways) min_cbm_bits=%d sparse=%v shareable=%x bit_usage=%s\n",
							r.Name, r.NumCLOSIDs, r.CBMMask, r.CBMLen, r.MinCBMBits, r.SparseMasks, r.ShareableBits, r.BitUsage)
					} else {
						unit := "percent"
						if in.MBps && r.Name == "MB" {
							unit = "MiB/s (mba_MBps)"
						} else if r.BandwidthGran == 1 && r.MinBandwidth == 0 {
							unit = "1/8 GB/s (AMD; 2048 = unlimited)"
						}
						fmt.Fprintf(tw, "%s\t%d\tmin=%d gran=%d unit=%s delay_linear=%v %s\n", r.Name, r.NumCLOSIDs,
							r.MinBandwidth, r.BandwidthGran, unit, r.DelayLinear, r.ThrottleMode)
					}
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(w, "groups allowed (CLOSIDs): %d\n", in.CLOSIDs())
				if in.Mon != nil {
					fmt.Fprintf(w, "monitoring: %d RMIDs, events %s\n", in.Mon.NumRMIDs, strings.Join(in.Mon.Features, ", "))
				} else {
					fmt.Fprintln(w, "monitoring: none")
				}
				return nil
			})
		},
	}

	name := resctrl.GroupName

	ls := &cobra.Command{
		Use:   "ls",
		Short: "List resource groups with their schemata, task and CPU counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vs, err := client().List()
			if err != nil {
				return err
			}
			return out(cmd, vs, func(w io.Writer) error { return resctrl.WriteList(w, vs) })
		},
	}

	show := &cobra.Command{
		Use:   "show GROUP",
		Short: "Show one group: mode, schemata, tasks, CPUs, monitoring counters",
		Example: `  colo resctrl show colo.web
  colo resctrl show colo.web/mon_groups/colo.api --json
  colo resctrl show /        # the default group`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := group(args[0])
			if err != nil {
				return err
			}
			c := client()
			if !c.Exists(p) {
				return badInputf("group %q does not exist at %s (see colo resctrl ls)", args[0], resctrl.ResolveRoot(root))
			}
			ctrl, mon, _ := resctrl.SplitGroup(p)
			v, err := c.View(resctrl.Group{Path: p, Ctrl: ctrl, Mon: mon != "", Owned: c.Owns(p)}, true)
			if err != nil {
				return err
			}
			return out(cmd, v, func(w io.Writer) error {
				fmt.Fprintf(w, "group:    %s\n", name(v.Path))
				if !v.Group.Mon {
					fmt.Fprintf(w, "mode:     %s\n", v.Mode)
					fmt.Fprintf(w, "schemata: %s\n", v.Schemata)
				}
				fmt.Fprintf(w, "tasks:    %s\n", strings.Trim(fmt.Sprint(v.Tasks), "[]"))
				fmt.Fprintf(w, "cpus:     %s\n", machine.FormatCPUList(v.CPUs))
				printMon(w, v.Mon)
				return nil
			})
		},
	}

	var create bool
	set := &cobra.Command{
		Use:   "set GROUP SCHEMATA",
		Short: "Write schemata lines to a group (partial: other resources and domains keep their values)",
		Example: `  colo resctrl set colo.web 'L3:0=ff0;1=ff0;MB:0=50'
  colo resctrl set colo.batch 'L3:0=f' --create`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := group(args[0])
			if err != nil {
				return err
			}
			s, err := resctrl.ParseSpec(args[1])
			if err != nil {
				return badInputf("schemata %q: %v", args[1], err)
			}
			c := client()
			err = c.Apply(resctrl.Change{Group: p, Create: create, Schemata: s})
			if err != nil {
				return kernelRejected(err)
			}
			return printSet(cmd, c, p, name(p), s, asJSON)
		},
	}
	set.Flags().BoolVar(&create, "create", false, "create the group if it does not exist")

	assign := &cobra.Command{
		Use:     "assign GROUP PID...",
		Short:   "Move tasks into a group (all or nothing)",
		Example: "  colo resctrl assign colo.web 4242 4243",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := group(args[0])
			if err != nil {
				return err
			}
			var pids []int
			for _, a := range args[1:] {
				pid, err := strconv.Atoi(a)
				if err != nil || pid <= 0 {
					return badInputf("PID %q is not a positive number", a)
				}
				pids = append(pids, pid)
			}
			if err := client().Apply(resctrl.Change{Group: p, Tasks: pids}); err != nil {
				return kernelRejected(err)
			}
			return out(cmd, map[string]any{"group": name(p), "moved": pids}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s: moved %d task(s)\n", name(p), len(pids))
				return err
			})
		},
	}

	mon := &cobra.Command{
		Use:   "mon GROUP",
		Short: "Read a group's monitoring counters per L3 domain (occupancy, MBM bytes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := group(args[0])
			if err != nil {
				return err
			}
			md, err := client().MonData(p)
			if err != nil {
				return err
			}
			return out(cmd, md, func(w io.Writer) error { printMon(w, md); return nil })
		},
	}

	var profile, mountDir, fromTree string
	emulate := &cobra.Command{
		Use:   "emulate (--profile NAME | --from-tree DIR) --mount DIR",
		Short: "Mount the validating resctrl emulator at DIR through FUSE (until Ctrl-C)",
		Long: `Serves an emulated resctrl filesystem at DIR. It accepts and rejects writes exactly as
the kernel's resctrl does for the chosen platform (errno and info/last_cmd_status),
so scripts, the colo client and third-party tools can be tested without RDT.

Profiles: ` + strings.Join(emu.ProfileNames(), ", ") + `, or any machine of
"colo machine list" with optional variants: NAME+cdp, +nomba, +mbps, +smba, +nomon,
+unpadded, +l2 (comma separated, e.g. skx-6138+cdp,mbps).

--from-tree DIR serves a captured host instead (colo resctrl capture DIR, or a plain
cp -r /sys/fs/resctrl DIR/resctrl): its resources, domain ids, masks, modes, CLOSID and
RMID counts, groups, tasks and counters as captured, with the kernel's rules for that
hardware. A tree colo cannot model is refused with the file named.`,
		Example: `  mkdir -p /tmp/resctrl && colo resctrl emulate --profile amd --mount /tmp/resctrl &
  colo resctrl emulate --from-tree bug-1234/ --mount /tmp/resctrl &
  echo 'L3:0=f0f' > /tmp/resctrl/schemata      # sparse masks are fine on AMD`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mountDir == "" {
				return badInputf("--mount DIR is required (an existing empty directory)")
			}
			var e *emu.Emulator
			var err error
			if fromTree != "" {
				if cmd.Flags().Changed("profile") {
					return badInputf("--profile and --from-tree exclude each other")
				}
				if e, err = emu.LoadTree(fromTree, emu.Options{PIDExists: emu.HostPIDExists}); err != nil {
					return badInput(err)
				}
			} else {
				p, err := emu.NamedProfile(profile)
				if err != nil {
					return badInput(err)
				}
				if e, err = emu.New(p, emu.Options{PIDExists: emu.HostPIDExists}); err != nil {
					return badInput(err)
				}
			}
			p := e.Profile()
			if err := prepareMount(mountDir, cmd.ErrOrStderr()); err != nil {
				return err
			}
			m, err := emu.Mount(e, mountDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "resctrl emulator %q mounted at %s; Ctrl-C (or fusermount3 -u %s) to stop\n", p.Name, mountDir, mountDir)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { m.Wait(); close(done) }()
			select {
			case <-sig:
				return m.Unmount()
			case <-done:
				return nil
			}
		},
	}
	emulate.Flags().StringVar(&profile, "profile", "intel", "emulated platform")
	emulate.Flags().StringVar(&mountDir, "mount", "", "directory to mount on")
	emulate.Flags().StringVar(&fromTree, "from-tree", "", "serve a captured tree (colo resctrl capture DIR, or DIR/resctrl copied with cp -r)")

	capture := &cobra.Command{
		Use:   "capture DIR",
		Short: "Snapshot this host's resctrl tree and CPU topology into DIR for a bug report",
		Long: `Writes DIR/resctrl (every file of the resctrl mount: info, every group's schemata,
mode, size, tasks, cpus, mon_data), DIR/cpu (the topology and cache files of
/sys/devices/system/cpu), DIR/cpuinfo, DIR/cmdline, DIR/version, DIR/mounts (the resctrl
lines) and DIR/errors (files that could not be read). Attach DIR (tar it) to a bug report;
"colo resctrl emulate --from-tree DIR", "colo machine detect --from-tree DIR" and
"colo doctor --from-tree DIR" replay it. docs/resctrl.md describes the format.`,
		Example: `  colo resctrl capture /tmp/myhost && tar czf myhost.tgz -C /tmp myhost`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sysCPU := "/sys/devices/system/cpu"
			if d := os.Getenv("COLO_CPU_DIR"); d != "" {
				sysCPU = d
			}
			if err := resctrl.Capture(args[0], resctrl.ResolveRoot(root), sysCPU, "/proc"); err != nil {
				return err
			}
			b, _ := os.ReadFile(args[0] + "/errors")
			unread := strings.Fields(strings.TrimSpace(string(b)))
			res := map[string]any{"dir": args[0], "root": resctrl.ResolveRoot(root), "unreadable": strings.Count(strings.TrimSpace(string(b)), "\n") + min(1, len(unread))}
			return out(cmd, res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "captured %s into %s (%d files unreadable, listed in %s/errors)\n", res["root"], args[0], res["unreadable"], args[0])
				return err
			})
		},
	}
	emulate.Annotations = signalIsStop // a server: Ctrl-C unmounts and stops it, exit 0

	reconcile := reconcileCmd(&root, out)

	for _, c := range []*cobra.Command{set, assign} {
		c.Flags().BoolVar(&foreign, "foreign", false, "allow changing groups that are not colo's (no colo. prefix) and the default group")
	}
	rc.AddCommand(info, ls, show, set, assign, mon, reconcile, emulate, capture, rmCmd(&root, out))
	rootCmd.AddCommand(rc)
}

// kernelRejected turns a rejected value (the kernel's EINVAL/ENOSPC with its message,
// or a group colo does not own) into a bad-input error (exit 2).
func kernelRejected(err error) error {
	var we *resctrl.WriteError
	if strings.Contains(err.Error(), "not colo's") {
		return badInputf("%v (pass --foreign to change it anyway)", err)
	}
	if errors.As(err, &we) || strings.Contains(err.Error(), "not a group path") {
		return badInput(err)
	}
	return err
}

func printMon(w io.Writer, md []resctrl.MonDomain) {
	if len(md) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "L3 DOMAIN\tOCCUPANCY\tMBM TOTAL\tMBM LOCAL\tUNAVAILABLE")
	for _, d := range md {
		fmt.Fprintf(tw, "%d\t%.2f MiB\t%d B\t%d B\t%s\n", d.Domain, float64(d.LLCOccupancy)/(1<<20), d.MBMTotalBytes, d.MBMLocalBytes, strings.Join(d.Unavailable, ","))
	}
	tw.Flush()
}
