package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"colo/cbm"
	"colo/store"
)

// writePartitionRun records the results of `colo partition` in run directory dir (kind
// "partition"), so that `colo report DIR` draws STP versus unfairness per policy and
// `colo export DIR` gives the tables. One scheduler run named "partition" holds one
// partitions row per (workload, policy) — workload is the 1-based index of the JSON
// output — and one partition_apps row per application in workload order. The model gives
// no IPC, so ipc_alone and ipc are NULL. The directory is marked complete only after
// every row is written; a message naming it goes to msg. An empty dir writes nothing.
func writePartitionRun(dir string, doc outputDoc, argv []string, msg io.Writer) error {
	if dir == "" {
		return nil
	}
	now := time.Now().UTC()
	st, err := store.Create(dir, store.Meta{Name: "partition", Kind: "partition", Machine: doc.Machine, Platform: "perfmodel",
		Command: argv, Created: now, Labels: map[string]string{
			"profiles": doc.Profiles, "bw_model": doc.BWModel, "max_bw_mbps": strconv.FormatFloat(doc.MaxBW, 'g', -1, 64)}})
	if err != nil {
		return badInput(fmt.Errorf("--out: %w", err))
	}
	fail := func(err error) error {
		st.Close()
		return fmt.Errorf("%s: %w (the directory is left incomplete)", dir, err)
	}
	w, err := st.BeginRun(store.Run{Scheduler: "partition", Trace: doc.Profiles, Start: now})
	if err != nil {
		return fail(err)
	}
	secs := 0.0
	for _, r := range doc.Results {
		pr := store.PartitionResult{Workload: strconv.Itoa(r.Workload), Policy: r.Policy, STP: r.STP, ANTT: r.ANTT,
			Unfairness: r.Unfairness, Jain: r.Jain}
		for _, a := range r.Apps {
			mask, err := cbm.Parse(a.Mask)
			if err != nil {
				return fail(err)
			}
			pr.Apps = append(pr.Apps, store.PartitionApp{App: a.Name, Cluster: a.Cluster, Ways: a.Ways, Mask: uint64(mask),
				IPCAlone: math.NaN(), IPC: math.NaN(), Slowdown: a.Slowdown})
		}
		if err := w.Partition(pr); err != nil {
			return fail(err)
		}
		secs += r.Seconds
	}
	nan := math.NaN()
	if err := w.Finish(store.Summary{Name: "partition", PriorityIPCE: nan, BatchIPCE: nan, GlobalIPCE: nan,
		TimeOverTarget: nan, TimeOverTargetP90: nan, QueueDelayMean: nan, QueueDelayP90: nan, VirtualSeconds: nan,
		WallSeconds: secs, Extra: map[string]float64{"partition_results": float64(len(doc.Results))}}); err != nil {
		return fail(err)
	}
	if err := st.Complete(); err != nil {
		return fail(err)
	}
	if err := st.Close(); err != nil {
		return err
	}
	fmt.Fprintf(msg, "colo: wrote partition run %s (%d results); draw it with `colo report %s`\n", dir, len(doc.Results), dir)
	return nil
}
