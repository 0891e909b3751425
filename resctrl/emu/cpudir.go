package emu

import (
	"fmt"
	"os"
	"path/filepath"

	"colo/machine"
)

// WriteCPUDir writes the sysfs CPU topology of a profile into dir, laid out like
// /sys/devices/system/cpu (and a capture's DIR/cpu): online, modalias (the vendor),
// and per CPU topology/physical_package_id, core_id and cache/index3/{level, type,
// size, ways_of_associativity, coherency_line_size, id, shared_cpu_list}. CPUs are
// spread evenly over the L3 domains in id order and the domains evenly over the
// sockets; each CPU is its own core. The cache id is the kernel's L3 domain id, so a
// colo that reads this topology ($COLO_CPU_DIR) addresses the emulator's domains as a
// real host's.
func WriteCPUDir(p *Profile, dir string) error {
	if p.L3 == nil {
		return fmt.Errorf("profile %s has no L3", p.Name)
	}
	ids := p.L3IDs()
	per := p.CPUs / len(ids)
	if per < 1 || p.CPUs%len(ids) != 0 {
		return fmt.Errorf("profile %s: %d CPUs do not spread over %d L3 domains", p.Name, p.CPUs, len(ids))
	}
	sockets := max(p.Sockets, 1)
	if len(ids)%sockets != 0 {
		return fmt.Errorf("profile %s: %d L3 domains do not spread over %d sockets", p.Name, len(ids), sockets)
	}
	w := func(rel, text string) error {
		f := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		return os.WriteFile(f, []byte(text+"\n"), 0o644)
	}
	if err := w("online", fmt.Sprintf("0-%d", p.CPUs-1)); err != nil {
		return err
	}
	ven := map[machine.Vendor]string{machine.Intel: "cpu:type:x86,ven0000fam0006mod008F:feature:,0000",
		machine.AMD: "cpu:type:x86,ven0002fam0019mod0011:feature:,0000", machine.Arm: "cpu:type:aarch64:feature:,0000"}[p.Vendor]
	if err := w("modalias", ven); err != nil {
		return err
	}
	domsPerSocket := len(ids) / sockets
	for c := 0; c < p.CPUs; c++ {
		d := c / per
		first := d * per
		files := [][2]string{
			{"topology/physical_package_id", fmt.Sprint(d / domsPerSocket)},
			{"topology/core_id", fmt.Sprint(c - (d/domsPerSocket)*domsPerSocket*per)},
			{"cache/index3/level", "3"},
			{"cache/index3/type", "Unified"},
			{"cache/index3/size", fmt.Sprintf("%dK", p.L3.SizeBytes>>10)},
			{"cache/index3/ways_of_associativity", fmt.Sprint(p.L3.CBMLen)},
			{"cache/index3/coherency_line_size", "64"},
			{"cache/index3/id", fmt.Sprint(ids[d])},
			{"cache/index3/shared_cpu_list", fmt.Sprintf("%d-%d", first, first+per-1)},
		}
		for _, f := range files {
			if err := w(fmt.Sprintf("cpu%d/%s", c, f[0]), f[1]); err != nil {
				return err
			}
		}
	}
	return nil
}
