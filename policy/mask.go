package policy

import (
	"fmt"

	"colo/cbm"
	"colo/machine"
)

// ClusterIDs numbers the distinct masks of a workload in order of first appearance and
// returns each application's cluster index: applications with identical masks form one
// cluster (MODEL.md §1). Partially overlapping masks are different clusters.
func ClusterIDs(masks []uint64) []int {
	of := make([]int, len(masks))
	seen := map[uint64]int{}
	for a, m := range masks {
		id, ok := seen[m]
		if !ok {
			id = len(seen)
			seen[m] = id
		}
		of[a] = id
	}
	return of
}

// PackMasks lays out clusters of the given way counts contiguously without overlap, the
// first cluster at the highest ways and each next one below it, as LFOC+'s kernel code and
// PBBCache do (seed001.md §1.5 enforce_cluster_partitioning; readme-example.md: ways 2,2,1,1,4,1
// → 0x600, 0x180, 0x40, 0x20, 0x1e, 0x1). It fails if the ways do not fit.
func PackMasks(m *machine.Profile, ways []int) ([]uint64, error) {
	top := m.LLC.Ways
	out := make([]uint64, len(ways))
	for i, w := range ways {
		if w < max(1, m.CAT.MinCBMBits) {
			return nil, fmt.Errorf("cluster %d has %d ways, %s needs at least %d", i+1, w, m.Name, max(1, m.CAT.MinCBMBits))
		}
		if w > top {
			return nil, fmt.Errorf("clusters need more than the %d ways of %s", m.LLC.Ways, m.Name)
		}
		top -= w
		out[i] = uint64(cbm.Run(top, w))
	}
	return out, nil
}
