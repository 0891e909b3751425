package emu

import (
	"fmt"
	"runtime"
	"testing"
)

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemory1000Groups measures the emulator's heap for 1000 groups: 15 CTRL_MON
// groups (all CLOSIDs of icx-4314 without MBA) and 985 MON groups spread over them,
// each with one task, on a profile with 1024 RMIDs.
func BenchmarkMemory1000Groups(b *testing.B) {
	m, _ := NamedProfile("intel")
	p := m.Clone()
	p.MB = nil
	p.Mon.NumRMIDs = 1024
	var perGroup float64
	for i := 0; i < b.N; i++ {
		before := heap()
		e, err := New(p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for c := 1; c < p.L3.NumCLOSIDs; c++ {
			if err := e.Mkdir(fmt.Sprintf("c%d", c)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		for n < 1000 {
			path := fmt.Sprintf("c%d/mon_groups/m%d", 1+n%(p.L3.NumCLOSIDs-1), n)
			if err := e.Mkdir(path); err != nil {
				b.Fatal(err)
			}
			if err := e.WriteFile(fmt.Sprintf("c%d/tasks", 1+n%(p.L3.NumCLOSIDs-1)), []byte(fmt.Sprint(1000+n))); err != nil {
				b.Fatal(err)
			}
			if err := e.WriteFile(path+"/tasks", []byte(fmt.Sprint(1000+n))); err != nil {
				b.Fatal(err)
			}
			n++
		}
		after := heap()
		perGroup = float64(after-before) / 1000
		runtime.KeepAlive(e)
	}
	b.ReportMetric(perGroup, "B/group")
	b.ReportMetric(perGroup*1000/1024, "KiB/1000groups")
}
