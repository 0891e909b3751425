package agent

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"colo/agent/core"
	"colo/policy/mbmassign"
)

// mbmState is the agent's share of the assignable MBM counters (the kernel's mbm_event
// mode): who holds one this period, decided by policy/mbmassign every MBMPeriod.
type mbmState struct {
	checked  bool
	on       bool
	slots    int // tenants that can hold counters (both events on every domain)
	rotor    *mbmassign.Rotor
	last     time.Duration
	started  bool
	held     map[string]bool // monitoring group path -> holds counters
	rotation int
}

// mbmMode reads whether the mount is in mbm_event mode.
func (a *Agent) mbmMode() {
	a.mbm.checked = true
	b, err := a.o.Groups.FS().ReadFile("info/L3_MON/mbm_assign_mode")
	if err != nil || !strings.Contains(string(b), "[mbm_event]") {
		return
	}
	a.mbm.on = true
	a.mbm.rotor = mbmassign.NewRotor(0)
	a.mbm.held = map[string]bool{}
}

// counterSlots frees the counters the agent's own control groups took on mkdir (their
// tasks are counted in their containers' monitoring groups) and returns how many
// tenants the counters can serve: per domain the free counters plus those the tenants
// hold, halved (each tenant takes mbm_total_bytes and mbm_local_bytes).
func (a *Agent) counterSlots(tenants []string) int {
	fs := a.o.Groups.FS()
	if names, err := fs.ReadDir(""); err == nil {
		for _, n := range names {
			g := strings.TrimSuffix(n, "/")
			if strings.HasSuffix(n, "/") && strings.HasPrefix(g, a.o.Groups.Prefix()) {
				_ = fs.WriteFile(g+"/mbm_L3_assignments", []byte("mbm_total_bytes:*=_\n"))
				_ = fs.WriteFile(g+"/mbm_L3_assignments", []byte("mbm_local_bytes:*=_\n"))
			}
		}
	}
	held := 0
	for _, mon := range tenants {
		if t, err := fs.ReadFile(mon + "/mbm_L3_assignments"); err == nil && strings.Contains(strings.SplitN(string(t), "\n", 2)[0], "=e") {
			held++
		}
	}
	av, err := fs.ReadFile("info/L3_MON/available_mbm_cntrs")
	if err != nil {
		return 0
	}
	free := -1
	for _, tok := range strings.Split(strings.TrimSpace(string(av)), ";") {
		_, v, _ := strings.Cut(tok, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0
		}
		if free < 0 || n < free {
			free = n
		}
	}
	return (free + 2*held) / 2
}

// rotateCounters gives the counters to the tenants mbmassign picks (priority first, then
// the heaviest measured, the rest in rotation) every MBMPeriod. A tenant that gets a
// counter starts its bandwidth baseline at zero now (the kernel counts from the
// assignment); one without reads Unassigned, which the reader keeps as "not measured".
func (a *Agent) rotateCounters(now time.Duration) {
	if !a.mbm.checked {
		a.mbmMode()
	}
	if !a.mbm.on || (a.mbm.started && now-a.mbm.last < a.o.MBMPeriod) {
		return
	}
	a.mbm.started, a.mbm.last = true, now
	var ts []mbmassign.Tenant
	lives := map[string]*live{}
	for _, mb := range a.core.Members() {
		l := a.live[mb.ID]
		if l == nil {
			continue
		}
		mon := a.al.Placement(l.tenant).Mon
		if mon == "" || lives[mon] != nil {
			continue
		}
		lives[mon] = l
		ts = append(ts, mbmassign.Tenant{Name: mon, Priority: mb.Req.Class == core.Priority,
			Bandwidth: l.sample.MemBandwidthMBps, Measured: l.monOK})
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	a.mbm.slots = a.counterSlots(names)
	a.mbm.rotor.Slots = a.mbm.slots
	asg, err := a.mbm.rotor.Next(ts)
	if err != nil {
		a.note(slog.LevelWarn, "mbm counters", "err", err)
		return
	}
	a.mbm.rotation = asg.RotationPeriods
	fs := a.o.Groups.FS()
	for _, mon := range asg.Unassigned { // also groups that took counters on mkdir
		_ = fs.WriteFile(mon+"/mbm_L3_assignments", []byte("mbm_total_bytes:*=_\n"))
		_ = fs.WriteFile(mon+"/mbm_L3_assignments", []byte("mbm_local_bytes:*=_\n"))
		delete(a.mbm.held, mon)
	}
	for _, mon := range asg.Hold {
		if a.mbm.held[mon] {
			continue
		}
		err1 := fs.WriteFile(mon+"/mbm_L3_assignments", []byte("mbm_total_bytes:*=e\n"))
		err2 := fs.WriteFile(mon+"/mbm_L3_assignments", []byte("mbm_local_bytes:*=e\n"))
		if err1 != nil || err2 != nil {
			a.count("mbm-assign-errors")
			continue
		}
		a.mbm.held[mon] = true
		l := lives[mon]
		l.reading.MBMTotalBytes, l.reading.MBMLocalBytes, l.reading.MonAt = 0, 0, now
		l.monGroup = "" // read it at the next interval
	}
}
