package docker

import (
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

func TestConvertStatsV1AndV2(t *testing.T) {
	now := time.Unix(1000, 0)
	base := container.StatsResponse{Read: now}
	base.CPUStats.CPUUsage.TotalUsage = 5e9
	base.CPUStats.OnlineCPUs = 2
	base.MemoryStats.Usage = 100 << 20
	base.MemoryStats.Limit = 256 << 20
	base.Networks = map[string]container.NetworkStats{"eth0": {RxBytes: 10, TxBytes: 20}, "eth1": {RxBytes: 1, TxBytes: 2}}

	v1 := base
	v1.CPUStats.CPUUsage.PercpuUsage = []uint64{3e9, 2e9}
	v1.MemoryStats.Stats = map[string]uint64{"total_inactive_file": 30 << 20}
	v1.BlkioStats.IoServiceBytesRecursive = []container.BlkioStatEntry{{Op: "Read", Value: 4096}, {Op: "Write", Value: 8192}, {Op: "Total", Value: 12288}, {Op: "Read", Value: 1}}
	s := convertStats(v1, "0-1")
	if s.CPUTotalNs != 5e9 || !s.PerCPUPresent || s.PerCPUNs[1] != 2e9 || s.MemoryBytes != 70<<20 || s.MemoryLimit != 256<<20 ||
		s.NetRxBytes != 11 || s.NetTxBytes != 22 || s.BlockRead != 4097 || s.BlockWrite != 8192 || s.Cpuset != "0-1" || s.OnlineCPUs != 2 {
		t.Fatalf("v1: %+v", s)
	}
	v2 := base
	v2.MemoryStats.Stats = map[string]uint64{"inactive_file": 40 << 20}
	v2.BlkioStats.IoServiceBytesRecursive = []container.BlkioStatEntry{{Op: "read", Value: 7}, {Op: "write", Value: 9}}
	s = convertStats(v2, "")
	if s.PerCPUPresent || s.MemoryBytes != 60<<20 || s.BlockRead != 7 || s.BlockWrite != 9 || !s.CPUAvailable {
		t.Fatalf("v2: %+v", s)
	}
	// An exited container reports an empty document: nothing is available, not zero usage.
	s = convertStats(container.StatsResponse{}, "")
	if s.CPUAvailable || s.MemAvailable || s.NetAvailable {
		t.Fatalf("empty: %+v", s)
	}
}
