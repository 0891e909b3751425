// RMID allocation and limbo, and the monitoring settings (mba_MBps_event,
// max_threshold_occupancy) (fs/resctrl/monitor.c).

package emu

import (
	"syscall"
)

// allocRMID takes the oldest free RMID. With none free it fails with EBUSY while RMIDs
// wait in limbo (their occupancy is above max_threshold_occupancy), else ENOSPC.
func (e *Emulator) allocRMID() (int, error) {
	e.checkLimbo()
	if len(e.free) == 0 {
		if len(e.limbo) > 0 {
			return 0, syscall.EBUSY
		}
		return 0, syscall.ENOSPC
	}
	r := e.free[0]
	e.free = e.free[1:]
	e.mon.resetMBM(r)
	return r, nil
}

func (e *Emulator) releaseRMID(r int) {
	delete(e.rmids, r)
	if e.mon.maxOccupancy(r) > e.thresh {
		e.limbo = append(e.limbo, r)
		return
	}
	e.free = append(e.free, r)
}

// checkLimbo frees limbo RMIDs whose occupancy dropped to the threshold.
func (e *Emulator) checkLimbo() {
	keep := e.limbo[:0]
	for _, r := range e.limbo {
		if e.mon.maxOccupancy(r) <= e.thresh {
			e.free = append(e.free, r)
		} else {
			keep = append(keep, r)
		}
	}
	e.limbo = keep
}

func (e *Emulator) writeEvent(g *group, buf string) error {
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		return syscall.EINVAL
	}
	buf = buf[:len(buf)-1]
	e.cmd()
	if buf != "mbm_local_bytes" && buf != "mbm_total_bytes" || !contains(e.monFeatures(), buf) {
		e.status("Unsupported event id '%s'", buf)
		return syscall.EINVAL
	}
	g.event = buf
	return nil
}

func (e *Emulator) writeThreshold(buf string) error {
	v, ok := kstrtoul(buf, 10)
	if !ok || v > uint64(^uint32(0)) {
		return syscall.EINVAL
	}
	if v > e.p.L3.SizeBytes {
		return syscall.EINVAL
	}
	e.thresh = v
	return nil
}
