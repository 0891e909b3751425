package emu

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// domSource gives every task the same traffic on every L3 domain index, on an unknown
// CPU (so that SNC splits it evenly).
type domSource struct{ total, foot uint64 }

func (s *domSource) Sample(pid, dom int) Sample {
	return Sample{Footprint: s.foot, TotalBytes: s.total, LocalBytes: s.total / 2, CPU: -1}
}

func hasCounters(p *Profile) bool { return p.Mon != nil && p.Mon.Counters > 0 }

// realCases are the behaviours of real servers' shapes (docs/resctrl.md lists the
// sources): sparse domain ids, SNC, assignable counters, BMEC, io_alloc, NONCONT.
var realCases = []confCase{
	{name: "domain-ids-as-enumerated", rule: "schemata, size, bit_usage and mon_data use the kernel's domain ids, gaps included; a write naming an id that does not exist is EINVAL with no message (parse_line)", run: func(h *env) {
		ids := h.p.L3IDs()
		want := make([]string, len(ids))
		for i, id := range ids {
			want[i] = fmt.Sprint(id)
		}
		for _, f := range []string{"schemata", "size"} {
			for _, l := range strings.Split(strings.TrimSpace(h.read(f)), "\n") {
				name, rest, _ := strings.Cut(l, ":")
				if r := strings.TrimSpace(name); r != "L3" && r != "L3CODE" && r != "L3DATA" {
					continue
				}
				var got []string
				for _, dv := range strings.Split(rest, ";") {
					id, _, _ := strings.Cut(dv, "=")
					got = append(got, id)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					h.t.Fatalf("%s line %q has ids %v, want %v", f, l, got, want)
				}
			}
		}
		h.mkdir("g")
		missing := -1
		for id := 0; id <= ids[len(ids)-1]+1; id++ {
			if indexOf(ids, id) < 0 {
				missing = id
				break
			}
		}
		h.fail("g/schemata", fmt.Sprintf("%s:%d=1\n", cacheName(h.p), missing), syscall.EINVAL, "=ok")
		if h.p.Mon != nil {
			ents, err := h.fs.ReadDir("g/mon_data")
			if err != nil || len(ents) != len(ids) || ents[len(ents)-1] != monDirName("mon_L3_", ids[len(ids)-1])+"/" {
				h.t.Fatalf("mon_data %v %v, want one mon_L3_XX per id %v", ents, err, ids)
			}
		}
	}},
	{name: "noncont-cat-selftest", rule: "the kernel selftest L3_NONCONT_CAT: a contiguous half mask is accepted; ~(0xf << (bits/2-2)) & full is accepted exactly when sparse_masks is 1", run: func(h *env) {
		r := cacheName(h.p)
		sparseFile := strings.TrimSpace(h.read("info/" + r + "/sparse_masks"))
		full := fullMask(h.p)
		n := h.p.L3.CBMLen
		center := n / 2
		if center < 2 {
			return // the selftest needs at least four bits
		}
		h.mkdir("c1")
		cont := full >> uint(center)
		h.ok("c1/schemata", fmt.Sprintf("%s:%d=%x\n", r, h.p.L3IDs()[0], cont))
		non := ^(uint64(0xf) << uint(center-2)) & full
		err := h.fs.WriteFile("c1/schemata", []byte(fmt.Sprintf("%s:%d=%x\n", r, h.p.L3IDs()[0], non)))
		if (err == nil) != (sparseFile == "1") {
			h.t.Fatalf("non-contiguous %x: write error %v with sparse_masks %s", non, err, sparseFile)
		}
	}},
	{name: "closids-min-over-resources", rule: "the usable CLOSIDs are the minimum of num_closids over the enabled resources: mkdir beyond it is ENOSPC \"Out of CLOSIDs\"", only: func(p *Profile) bool { return p.Mon == nil || p.Mon.NumRMIDs > closidsOf(p) }, run: func(h *env) {
		n := closidsOf(h.p)
		if h.p.L2 != nil {
			n = min(n, h.p.L2.NumCLOSIDs)
		}
		for i := 1; i < n; i++ {
			h.mkdir(fmt.Sprintf("c%d", i))
		}
		h.mkdirFail("over", syscall.ENOSPC, "=Out of CLOSIDs")
	}},
	{name: "snc-sum", rule: "SNC: mon_L3_XX holds mon_sub_L3_YY per node and its files read their sum", inProcess: true, only: func(p *Profile) bool { return p.SNC > 1 && p.Mon != nil }, run: func(h *env) {
		h.e.SetSource(&domSource{total: 1001, foot: 4096})
		h.mkdir("g")
		h.ok("g/tasks", "100\n")
		h.e.Tick()
		ents, err := h.fs.ReadDir("g/mon_data/mon_L3_01")
		if err != nil || !strings.Contains(strings.Join(ents, " "), "mon_sub_L3_02/ mon_sub_L3_03/") {
			h.t.Fatalf("mon_L3_01 %v %v", ents, err)
		}
		var sum uint64
		for _, sub := range []string{"mon_sub_L3_02", "mon_sub_L3_03"} {
			var v uint64
			fmt.Sscan(h.read("g/mon_data/mon_L3_01/"+sub+"/mbm_total_bytes"), &v)
			if v == 0 {
				h.t.Fatalf("%s counted nothing", sub)
			}
			sum += v
		}
		if got := h.read("g/mon_data/mon_L3_01/mbm_total_bytes"); got != fmt.Sprintf("%d\n", sum) || sum != 1001 {
			h.t.Fatalf("mon_L3_01 reads %q, sub-domains sum to %d (traffic 1001)", got, sum)
		}
	}},
	{name: "mbm-assign-files", rule: "mbm_event mode: info/L3_MON/mbm_assign_mode \"[mbm_event]\", num_mbm_cntrs and available_mbm_cntrs per domain, mbm_assign_on_mkdir 1; BMEC *_config files hidden", only: hasCounters, run: func(h *env) {
		if got := h.read("info/L3_MON/mbm_assign_mode"); got != "[mbm_event]\ndefault\n" {
			h.t.Fatalf("mbm_assign_mode %q", got)
		}
		per := func(v int) string {
			var parts []string
			for _, id := range h.p.L3IDs() {
				parts = append(parts, fmt.Sprintf("%d=%d", id, v))
			}
			return strings.Join(parts, ";") + "\n"
		}
		if got := h.read("info/L3_MON/num_mbm_cntrs"); got != per(h.p.Mon.Counters) {
			h.t.Fatalf("num_mbm_cntrs %q", got)
		}
		// the default group holds two counters (both events) on every domain
		if got := h.read("info/L3_MON/available_mbm_cntrs"); got != per(h.p.Mon.Counters-2) {
			h.t.Fatalf("available_mbm_cntrs %q", got)
		}
		if _, err := h.fs.ReadFile("info/L3_MON/mbm_total_bytes_config"); err == nil {
			h.t.Fatal("BMEC config visible in mbm_event mode")
		}
		h.ok("info/L3_MON/mbm_assign_mode", "default\n")
		if _, err := h.fs.ReadFile("info/L3_MON/mbm_total_bytes_config"); err != nil {
			h.t.Fatalf("BMEC config hidden in default mode: %v", err)
		}
		h.fail("info/L3_MON/mbm_assign_mode", "bogus\n", syscall.EINVAL, "Unsupported assign mode")
	}},
	{name: "mbm-assign-mkdir-never-fails", rule: "with mbm_assign_on_mkdir, mkdir takes counters while free and still succeeds without: the group reads Unassigned; freeing a counter and assigning it (\"mbm_total_bytes:ID=e\") makes it count from zero; assigning with none free is ENOSPC", inProcess: true, only: hasCounters, run: func(h *env) {
		src := &domSource{total: 1000}
		h.e.SetSource(src)
		groups := h.p.Mon.Counters/2 - 1 // the default group holds one pair
		for i := 0; i < groups; i++ {
			h.mkdir(fmt.Sprintf("mon_groups/m%d", i))
		}
		h.mkdir("mon_groups/late")
		ids := h.p.L3IDs()
		all := func(c string) string {
			var parts []string
			for _, id := range ids {
				parts = append(parts, fmt.Sprintf("%d=%s", id, c))
			}
			return strings.Join(parts, ";")
		}
		if got := h.read("mon_groups/late/mbm_L3_assignments"); got != "mbm_total_bytes:"+all("_")+"\nmbm_local_bytes:"+all("_")+"\n" {
			h.t.Fatalf("late assignments %q", got)
		}
		h.ok("mon_groups/late/tasks", "100\n")
		h.e.Tick()
		if got := h.read("mon_groups/late/mon_data/mon_L3_00/mbm_total_bytes"); got != "Unassigned\n" {
			h.t.Fatalf("unassigned read %q", got)
		}
		if got := h.read("mon_groups/late/mon_data/mon_L3_00/llc_occupancy"); got == "Unassigned\n" {
			h.t.Fatal("occupancy needs no counter")
		}
		h.fail("mon_groups/late/mbm_L3_assignments", "mbm_total_bytes:0=e\n", syscall.ENOSPC, "Failed to allocate counter")
		h.ok("mon_groups/m0/mbm_L3_assignments", "mbm_total_bytes:*=_\n")
		h.ok("mon_groups/late/mbm_L3_assignments", "mbm_total_bytes:0=e\n")
		if got := h.read("mon_groups/late/mon_data/mon_L3_00/mbm_total_bytes"); got != "0\n" {
			h.t.Fatalf("fresh counter %q", got)
		}
		h.e.Tick()
		if got := h.read("mon_groups/late/mon_data/mon_L3_00/mbm_total_bytes"); got != "1000\n" {
			h.t.Fatalf("counter after one tick %q", got)
		}
		if got := h.read("mon_groups/m0/mon_data/mon_L3_00/mbm_total_bytes"); got != "Unassigned\n" {
			h.t.Fatalf("released counter reads %q", got)
		}
		h.fail("mon_groups/late/mbm_L3_assignments", "bogus_event:0=e\n", syscall.EINVAL, "Invalid event")
	}},
	{name: "bmec-change-unavailable", rule: "BMEC: mbm_total_bytes_config reads id=0x7f per domain (mbm_local 0x15); a change resets both events of that domain, whose next read is Unavailable; bits above 0x7f are EINVAL", inProcess: true, only: func(p *Profile) bool { return p.Mon != nil && p.Mon.BMEC && p.Mon.Counters == 0 }, run: func(h *env) {
		ids := h.p.L3IDs()
		if got := h.read("info/L3_MON/mbm_local_bytes_config"); !strings.HasPrefix(got, fmt.Sprintf("%d=0x15;%d=0x15", ids[0], ids[1])) {
			h.t.Fatalf("mbm_local_bytes_config %q", got)
		}
		h.e.SetSource(&domSource{total: 500})
		h.mkdir("g")
		h.ok("g/tasks", "100\n")
		h.e.Tick()
		d1 := fmt.Sprintf("g/mon_data/mon_L3_%02d/", ids[1])
		if got := h.read(d1 + "mbm_local_bytes"); got != "250\n" {
			h.t.Fatalf("before %q", got)
		}
		h.ok("info/L3_MON/mbm_total_bytes_config", fmt.Sprintf("%d=0x15\n", ids[1]))
		if got := h.read("info/L3_MON/mbm_total_bytes_config"); !strings.HasPrefix(got, fmt.Sprintf("%d=0x7f;%d=0x15", ids[0], ids[1])) {
			h.t.Fatalf("after the write %q", got)
		}
		for _, ev := range []string{"mbm_total_bytes", "mbm_local_bytes"} {
			if got := h.read(d1 + ev); got != "Unavailable\n" {
				h.t.Fatalf("%s after a config change %q", ev, got)
			}
			if got := h.read(d1 + ev); got != "0\n" {
				h.t.Fatalf("%s second read %q", ev, got)
			}
		}
		if got := h.read("g/mon_data/mon_L3_00/mbm_local_bytes"); got != "250\n" {
			h.t.Fatalf("other domain touched: %q", got)
		}
		h.fail("info/L3_MON/mbm_total_bytes_config", "0=0x80\n", syscall.EINVAL, "Invalid event configuration")
	}},
	{name: "io-alloc", rule: "io_alloc: disabled at mount; enabling takes the highest CLOSID (mkdir then runs out one earlier); io_alloc_cbm reads id=mask, takes \"*=\" for every domain, mirrors under CDP, shows as hardware-shared in bit_usage; reading it while disabled is EINVAL", only: func(p *Profile) bool { return p.L3.IOAlloc }, run: func(h *env) {
		r := cacheName(h.p)
		if got := h.read("info/" + r + "/io_alloc"); got != "disabled\n" {
			h.t.Fatalf("io_alloc %q", got)
		}
		if _, err := h.fs.ReadFile("info/" + r + "/io_alloc_cbm"); err == nil {
			h.t.Fatal("io_alloc_cbm readable while disabled")
		}
		h.ok("info/"+r+"/io_alloc", "1\n")
		h.ok("info/"+r+"/io_alloc_cbm", "*=f\n")
		other := r
		if h.p.CDP {
			other = "L3DATA"
		}
		if got := h.read("info/" + other + "/io_alloc_cbm"); !strings.HasPrefix(got, "0=000f;1=000f") {
			h.t.Fatalf("io_alloc_cbm %q", got)
		}
		if got := h.read("info/" + r + "/bit_usage"); !strings.HasPrefix(got, "0=SSSSSSSSSSSSXXXX") {
			h.t.Fatalf("bit_usage %q", got)
		}
		n := closidsOf(h.p)
		for i := 1; i < n-1; i++ {
			h.mkdir(fmt.Sprintf("c%d", i))
		}
		h.mkdirFail("over", syscall.ENOSPC, "=Out of CLOSIDs")
		h.ok("info/"+r+"/io_alloc", "0\n")
		h.mkdir("now")
		h.fail("info/"+r+"/io_alloc", "1\n", syscall.ENOSPC, "for io_alloc is used by now group")
	}},
}

func init() { confCases = append(confCases, realCases...) }

func TestRealProfilesHaveTheirShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		ids  string
	}{{"amd-genoa", "[0 2 4 6 8 10 12 14]"}, {"amd-gap", "[0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23]"}, {"intel-6252n", "[0 1]"}} {
		p, err := NamedProfile(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(p.L3IDs()); got != c.ids {
			t.Fatalf("%s ids %s want %s", c.name, got, c.ids)
		}
	}
	e, _ := NewNamed("amd-genoa", Options{})
	b, _ := e.ReadFile("schemata")
	// libvirt's captured tree, line for line
	want := "  SMBA:0=2048;2=2048;4=2048;6=2048;8=2048;10=2048;12=2048;14=2048\n" +
		"    MB:0=2048;2=2048;4=2048;6=2048;8=2048;10=2048;12=2048;14=2048\n" +
		"    L3:0=ffff;2=ffff;4=ffff;6=ffff;8=ffff;10=ffff;12=ffff;14=ffff\n"
	if string(b) != want {
		t.Fatalf("amd-genoa schemata\n%s\nwant\n%s", b, want)
	}
}
