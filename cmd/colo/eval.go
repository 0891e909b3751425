package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"colo/cbm"
	"colo/machine"
	"colo/perfmodel"
	"colo/policy"
	"colo/profile"

	"github.com/spf13/cobra"
)

// evalFlags are the flags colo eval and colo partition share.
type evalFlags struct {
	machine  string
	profiles string
	workload string
	bwModel  string
	maxBW    float64
	format   string
	json     bool
}

// maxBWMBps bounds --max-bw: 10^8 MB/s (100 TB/s) is far above any socket's memory
// bandwidth; a larger value is a typing error, not a machine.
const maxBWMBps = 1e8

func (f *evalFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.machine, "machine", "skx-6138", "machine profile (colo machine list); its LLC way count must match the profiles")
	fl.StringVar(&f.profiles, "profiles", "", "per-ways profiles in metrics.csv format (default: the embedded PBBCache Skylake data set)")
	fl.StringVar(&f.workload, "workload", "", "comma-separated benchmark names (duplicates are distinct instances)")
	fl.StringVar(&f.bwModel, "bw-model", "none", "bandwidth contention model: none, simple, morad or stalls (data/pbbcache-skylake/MODEL.md §4)")
	fl.Float64Var(&f.maxBW, "max-bw", 0, "machine memory-bandwidth limit in MB/s (default: the machine's mem_bw_per_socket_mbps)")
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or json (= --json)")
	jsonFlag(fl, &f.json)
}

// setup resolves the machine, profiles and model options; every failure is bad input.
func (f *evalFlags) setup() (*machine.Profile, *profile.Set, perfmodel.Options, error) {
	var opt perfmodel.Options
	m, err := machine.Get(f.machine)
	if err != nil {
		return nil, nil, opt, badInput(fmt.Errorf("--machine: %w", err))
	}
	var set *profile.Set
	if f.profiles == "" {
		set, err = profile.Default()
	} else {
		set, err = profile.LoadFile(f.profiles)
	}
	if err != nil {
		return nil, nil, opt, badInput(err)
	}
	if set.Ways() != m.LLC.Ways {
		return nil, nil, opt, badInputf("profiles %s have %d way counts but machine %s has %d ways: pick the machine the profiles were measured on (e.g. --machine skx-6138 for the PBBCache data)",
			set.Source, set.Ways(), m.Name, m.LLC.Ways)
	}
	bw, err := perfmodel.ParseBWModel(f.bwModel)
	if err != nil {
		return nil, nil, opt, badInput(fmt.Errorf("--bw-model: %w", err))
	}
	if !(f.maxBW >= 0 && f.maxBW <= maxBWMBps) { // NaN fails both
		return nil, nil, opt, badInputf("--max-bw %v: want a bandwidth in MB/s, at most %.0g (0: the machine's)", f.maxBW, maxBWMBps)
	}
	opt.BW = bw
	opt.MaxBW = f.maxBW
	if opt.MaxBW == 0 {
		opt.MaxBW = m.MemBWPerSocketMBps
	}
	format, err := outputFormat(f.json, f.format, "table", "csv", "json")
	if err != nil {
		return nil, nil, opt, err
	}
	f.format = format
	return m, set, opt, nil
}

// appOut and resultOut are the stable JSON schema shared by colo eval and colo partition
// (docs/partition.md). Keys never change meaning; new keys may be added.
type appOut struct {
	Name          string  `json:"name"`
	Cluster       int     `json:"cluster"`
	Mask          string  `json:"mask"`
	Ways          int     `json:"ways"`
	Share         float64 `json:"share"`
	SlowdownCache float64 `json:"slowdown_cache"`
	BWFactor      float64 `json:"bw_factor"`
	Slowdown      float64 `json:"slowdown"`
}

type resultOut struct {
	Workload   int      `json:"workload"`
	Policy     string   `json:"policy"`
	STP        float64  `json:"stp"`
	ANTT       float64  `json:"antt"`
	Unfairness float64  `json:"unfairness"`
	Jain       float64  `json:"jain"`
	Seconds    float64  `json:"seconds"`
	Nodes      int64    `json:"nodes"`
	Gap        float64  `json:"gap,omitempty"`
	Apps       []appOut `json:"apps"`
	Warnings   []string `json:"warnings,omitempty"`
}

type outputDoc struct {
	Machine  string      `json:"machine"`
	Profiles string      `json:"profiles"`
	BWModel  string      `json:"bw_model"`
	MaxBW    float64     `json:"max_bw_mbps"`
	Results  []resultOut `json:"results"`
}

// makeResult turns an evaluated solution into the output record.
func makeResult(wl int, pol string, names []string, masks []uint64, cluster []int, r *perfmodel.Result) resultOut {
	out := resultOut{Workload: wl, Policy: pol, STP: r.STP, ANTT: r.ANTT, Unfairness: r.Unfairness, Jain: r.Jain, Warnings: r.Warnings}
	for i, a := range r.Apps {
		out.Apps = append(out.Apps, appOut{
			Name: names[i], Cluster: cluster[i] + 1, Mask: cbm.Mask(masks[i]).String(), Ways: cbm.Mask(masks[i]).Ones(),
			Share: a.Share, SlowdownCache: a.SlowdownCache, BWFactor: a.BWFactor, Slowdown: a.Slowdown,
		})
	}
	return out
}

// writeResults prints results as a PBBCache-like table, CSV, or the JSON document.
func writeResults(w io.Writer, format string, doc outputDoc) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case "csv":
		fmt.Fprintln(w, "workload,policy,app,name,cluster,mask,ways,share,slowdown_cache,bw_factor,slowdown,stp,antt,unfairness,jain,seconds,nodes")
		for _, r := range doc.Results {
			for i, a := range r.Apps {
				fmt.Fprintf(w, "%d,%s,%d,%s,%d,%s,%d,%.6f,%.6f,%.6f,%.6f,,,,,,\n", r.Workload, r.Policy, i+1, a.Name, a.Cluster, a.Mask, a.Ways, a.Share, a.SlowdownCache, a.BWFactor, a.Slowdown)
			}
			fmt.Fprintf(w, "%d,%s,,OVERALL,,,,,,,,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", r.Workload, r.Policy, r.STP, r.ANTT, r.Unfairness, r.Jain, r.Seconds, r.Nodes)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "W#\tPOLICY\tAPP\tNAME\tCLUSTER\tMASK(WAYS)\tSHARE\tSLOWDOWN_CACHE\tSLOWDOWN")
	for _, r := range doc.Results {
		for i, a := range r.Apps {
			fmt.Fprintf(tw, "W%d\t%s\t%d\t%s\t%d\t%s(%d)\t%.3f\t%.5f\t%.5f\n", r.Workload, r.Policy, i+1, a.Name, a.Cluster, a.Mask, a.Ways, a.Share, a.SlowdownCache, a.Slowdown)
		}
		fmt.Fprintf(tw, "W%d\t%s\t-\tOVERALL\tSTP %.5f\tANTT %.5f\tUNF %.5f\tJAIN %.5f\t%.6fs #%d\n", r.Workload, r.Policy, r.STP, r.ANTT, r.Unfairness, r.Jain, r.Seconds, r.Nodes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range doc.Results {
		for _, x := range r.Warnings {
			fmt.Fprintf(w, "warning: W%d %s: %s\n", r.Workload, r.Policy, x)
		}
	}
	return nil
}

func init() {
	var f evalFlags
	var masksFlag string
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate one workload under given CAT masks with the PBBCache performance model",
		Long: `eval estimates each application's cache-only slowdown (per-ways table, Whirlpool-style
split of shared masks) and final slowdown (bandwidth model), and the workload's STP,
ANTT and unfairness, exactly as PBBCache does (data/pbbcache-skylake/MODEL.md).
Applications with identical masks share those ways (one cluster); masks that overlap
partially share the common ways way by way.`,
		Example: `  colo eval --machine skx-6138 --workload sphinx306,lbm06,libquantum06,applu00,soplex06,milc06 \
      --masks 0x600,0x180,0x40,0x20,0x1e,0x1 --bw-model stalls --max-bw 35000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, set, opt, err := f.setup()
			if err != nil {
				return err
			}
			if f.workload == "" {
				return badInputf("--workload is required (e.g. --workload sphinx306,lbm06)")
			}
			names, err := profile.SplitWorkload(f.workload)
			if err != nil {
				return badInput(fmt.Errorf("--workload: %w", err))
			}
			apps, err := set.Lookup(names)
			if err != nil {
				return badInput(fmt.Errorf("--workload: %w", err))
			}
			if masksFlag == "" {
				return badInputf("--masks is required: one hex mask per application, e.g. --masks 0x600,0x180")
			}
			ms := strings.Split(masksFlag, ",")
			if len(ms) != len(names) {
				return badInputf("--masks has %d masks for %d applications: give one per application, in workload order", len(ms), len(names))
			}
			masks := make([]uint64, len(ms))
			for i, s := range ms {
				var mk cbm.Mask
				if mk, err = cbm.Parse(s); err == nil {
					masks[i], err = uint64(mk), m.CheckMask(uint64(mk))
				}
				if err != nil {
					return badInput(fmt.Errorf("--masks, application %d (%s): %w", i+1, names[i], err))
				}
			}
			of := policy.ClusterIDs(masks)
			r, err := perfmodel.EvaluateMasks(apps, masks, opt)
			if err != nil {
				return badInput(err)
			}
			doc := outputDoc{Machine: m.Name, Profiles: set.Source, BWModel: string(opt.BW), MaxBW: opt.MaxBW,
				Results: []resultOut{makeResult(1, "masks", names, masks, of, r)}}
			return writeResults(cmd.OutOrStdout(), f.format, doc)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&masksFlag, "masks", "", "one CAT mask per application, comma-separated hex (e.g. 0x600,0x180,...)")
	rootCmd.AddCommand(cmd)
}
