package sim

import (
	"fmt"
	"strconv"
	"strings"

	"colo/profile"
)

// WorkloadNames documents the names ParseWorkload accepts.
const WorkloadNames = `neighbor:SIZE[:PAGES[:random|stride]]  PAGES = 4k|2m|1g (also none, thp, hugetlb-2m, hugetlb-1g); default 4k, random
7zip:LEVEL                              7-Zip -mx=LEVEL (1..9), threads = cores given
matrix-3d:N                             stress-ng matrix-3d, N³ float32 matrices
tsearch:NODES                           stress-ng tsearch with NODES nodes (131072 = 2^17)
cpu | lookbusy                          CPU-bound loop, dCat's lookbusy
mlr:SIZE | mload:SIZE                   dCat's random-latency and bandwidth microbenchmarks
table:BENCH                             a benchmark of the embedded PBBCache metrics.csv (e.g. table:lbm06)
SIZE is bytes with an optional K, M or G suffix (binary): 6M, 60MB, 1G.`

// ParseWorkload builds a workload from a short name (see WorkloadNames), for job pools
// whose entries name their simulated model (the benchmark YAML's workload key). threads
// is the number of cores the job will get. tables resolves table:BENCH (nil: the embedded
// PBBCache set, profile.Default).
func ParseWorkload(spec string, threads int, tables *profile.Set) (Workload, error) {
	f := strings.Split(strings.TrimSpace(spec), ":")
	kind := strings.ToLower(f[0])
	args := f[1:]
	need := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			return fmt.Errorf("workload %q: %s takes %d to %d arguments; known workloads:\n%s", spec, kind, lo, hi, WorkloadNames)
		}
		return nil
	}
	num := func(i int, lo, hi int) (int, error) {
		n, err := strconv.Atoi(args[i])
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("workload %q: %q must be an integer in %d..%d", spec, args[i], lo, hi)
		}
		return n, nil
	}
	size := func(i int) (int64, error) {
		n, err := ParseSize(args[i])
		if err != nil {
			return 0, fmt.Errorf("workload %q: %w", spec, err)
		}
		return n, nil
	}
	var w Workload
	switch kind {
	case "neighbor":
		if err := need(1, 3); err != nil {
			return w, err
		}
		b, err := size(0)
		if err != nil {
			return w, err
		}
		page := Page4K
		if len(args) > 1 {
			switch strings.ToLower(args[1]) {
			case "4k", "none":
			case "2m", "thp", "hugetlb-2m":
				page = Page2M
			case "1g", "hugetlb-1g":
				page = Page1G
			default:
				return w, fmt.Errorf("workload %q: page size %q is not 4k, 2m or 1g", spec, args[1])
			}
		}
		w = Neighbor(b, page)
		if len(args) > 2 {
			switch strings.ToLower(args[2]) {
			case "random":
			case "stride":
				w = NeighborStride(b, page)
			default:
				return w, fmt.Errorf("workload %q: pattern %q is not random or stride", spec, args[2])
			}
		}
	case "7zip", "7z", "7zz":
		if err := need(1, 1); err != nil {
			return w, err
		}
		l, err := num(0, 1, 9)
		if err != nil {
			return w, err
		}
		w = SevenZip(l, threads)
	case "matrix-3d", "matrix3d":
		if err := need(1, 1); err != nil {
			return w, err
		}
		n, err := num(0, 1, 4096)
		if err != nil {
			return w, err
		}
		w = StressMatrix3D(n)
	case "tsearch":
		if err := need(1, 1); err != nil {
			return w, err
		}
		n, err := num(0, 1, 1<<30)
		if err != nil {
			return w, err
		}
		w = StressTsearch(n)
	case "cpu", "lookbusy":
		if err := need(0, 0); err != nil {
			return w, err
		}
		w = CPULoop()
		if kind == "lookbusy" {
			w = Lookbusy()
		}
	case "mlr", "mload":
		if err := need(1, 1); err != nil {
			return w, err
		}
		b, err := size(0)
		if err != nil {
			return w, err
		}
		w = MLR(b)
		if kind == "mload" {
			w = MLOAD(b)
		}
	case "table":
		if err := need(1, 1); err != nil {
			return w, err
		}
		if tables == nil {
			var err error
			if tables, err = profile.Default(); err != nil {
				return w, err
			}
		}
		t, err := tables.Get(args[0])
		if err != nil {
			return w, fmt.Errorf("workload %q: %w", spec, err)
		}
		w = Single(FromTable(t), threads)
	default:
		return w, fmt.Errorf("unknown workload %q; known workloads:\n%s", spec, WorkloadNames)
	}
	w.Threads = max(1, threads)
	return w, nil
}

// MaxSize bounds a size (a working set, a footprint): 1 TiB.
const MaxSize = 1 << 40

// ParseSize parses a byte count with an optional binary K, M or G suffix (an optional
// trailing B or iB is allowed): "6M", "60MB", "1GiB", "4096". At most MaxSize.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult = 1 << 10
	case strings.HasSuffix(t, "M"):
		mult = 1 << 20
	case strings.HasSuffix(t, "G"):
		mult = 1 << 30
	}
	if mult > 1 {
		t = t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive byte count such as 6M or 60MB", s)
	}
	if n > MaxSize/mult {
		return 0, fmt.Errorf("size %q: above the limit of 1 TiB", s)
	}
	return n * mult, nil
}
