// Package mbasweep measures the MB/s loop (policy/mbps) on the simulated machine: a
// bandwidth hog on every core of socket 0, a request from 10 % to 90 % of the socket's
// bandwidth, and the achieved bandwidth (MBM) period by period, beside what the plain MBA
// setting that nominally means the same bandwidth gives. Deterministic by seed.
package mbasweep

import (
	"fmt"
	"math"
	"time"

	"colo/machine"
	"colo/policy/mbps"
	"colo/sim"
)

// Config is one sweep.
type Config struct {
	Machine *machine.Profile
	// Sim options (seed, noise, MBA curve).
	Sim sim.Options
	// Fractions of the socket's bandwidth to request (default 0.1, 0.2, … 0.9).
	Fractions []float64
	// Periods of one second each per request (default 40).
	Periods int
	// Mbps tunes the controllers (default mbps.DefaultOptions()).
	Mbps *mbps.Options
	// Tolerance is the bar of "achieved" (default 0.08, the kernel selftest's).
	Tolerance float64
}

// Row is one request.
type Row struct {
	Fraction  float64 `json:"fraction"`
	Requested float64 `json:"requested_mbps"`
	// Achieved is the mean of the last five periods; Error (Achieved−Requested)/Requested.
	Achieved float64 `json:"achieved_mbps"`
	Error    float64 `json:"error"`
	// ConvergedS is the first period from which every later period is within Tolerance
	// (-1: never); Overshoot is the largest excess over the request after the first
	// change, a fraction of the request (0.05 = 5 % over).
	ConvergedS int     `json:"converged_s"`
	Overshoot  float64 `json:"overshoot"`
	State      string  `json:"state"`
	// Values are the final MBA value of each L3 domain, Quota the mean CPU quota.
	Values []int   `json:"values"`
	Quota  float64 `json:"quota"`
	// NominalValue is the plain MBA setting for the request (Intel: the percentage of the
	// socket; AMD and mba_MBps: the request divided over the socket's cores in the unit),
	// NominalAchieved what it gives, NominalError its relative miss.
	NominalValue    int     `json:"nominal_value"`
	NominalAchieved float64 `json:"nominal_achieved_mbps"`
	NominalError    float64 `json:"nominal_error"`
}

// Hog is the sweep's bandwidth hog, one per L3 domain: sequential sweeps over 1 GiB with
// deep prefetch (MLP 20) and a write-back per miss, demanding several times a core's
// share of the socket's bandwidth.
func Hog() sim.Workload {
	return sim.Single(&sim.Analytic{Label: "bw-hog", WorkingSetBytes: 1 << 30, Pattern: sim.Sequential,
		PageBytes: sim.Page4K, BaseCPI: 0.5, BaseStallFrac: 0.05, APKI: 100, MLP: 20, BytesPerMiss: 128}, 1)
}

// Run sweeps the requests.
func Run(cfg Config) ([]Row, error) {
	m := cfg.Machine
	if m == nil || m.MBA == nil {
		return nil, fmt.Errorf("mbasweep: the machine has no MBA")
	}
	fr := cfg.Fractions
	if len(fr) == 0 {
		fr = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	}
	periods := cfg.Periods
	if periods <= 0 {
		periods = 40
	}
	tol := cfg.Tolerance
	if tol <= 0 {
		tol = 0.08
	}
	opt := mbps.DefaultOptions()
	if cfg.Mbps != nil {
		opt = *cfg.Mbps
	}
	socketBW := m.MemBWPerSocketMBps
	if cfg.Sim.MemBWPerSocketMBps > 0 {
		socketBW = cfg.Sim.MemBWPerSocketMBps
	}
	var rows []Row
	for _, f := range fr {
		r, err := one(cfg, m, f, f*socketBW, periods, tol, opt)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// plant is the hogs of socket 0, one per domain, in CLOS 1.
type plant struct {
	sm  *sim.Machine
	ids []sim.ID
	dom []int
}

func newPlant(m *machine.Profile, o sim.Options) (*plant, error) {
	sm, err := sim.New(m, o)
	if err != nil {
		return nil, err
	}
	p := &plant{sm: sm}
	for d := 0; d < m.LLCDomains()/m.Sockets; d++ { // socket 0's domains
		var cores []int
		for c := 0; c < m.Cores(); c++ {
			if m.DomainOfCore(c) == d {
				cores = append(cores, c)
			}
		}
		id, err := sm.AddWorkload(Hog(), cores)
		if err != nil {
			return nil, err
		}
		if err := sm.Assign(id, 1); err != nil {
			return nil, err
		}
		p.ids = append(p.ids, id)
		p.dom = append(p.dom, d)
	}
	return p, nil
}

// set writes per-domain MBA values into CLOS 1 and the quotas.
func (p *plant) set(values []int, quotas []float64) error {
	masks, mba := p.sm.CLOS(1)
	for i, d := range p.dom {
		mba[d] = values[i]
	}
	if err := p.sm.SetCLOS(1, masks, mba); err != nil {
		return err
	}
	for i, id := range p.ids {
		if err := p.sm.SetQuota(id, quotas[i]); err != nil {
			return err
		}
	}
	return nil
}

// step runs one second and returns each domain's MBM bandwidth in MB/s.
func (p *plant) step(bw []float64) []float64 {
	out := p.sm.Step(time.Second)
	for i, id := range p.ids {
		for _, c := range out {
			if c.ID == id {
				bw[i] = float64(c.MemBytesTotal) / 1e6
			}
		}
	}
	return bw
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func one(cfg Config, m *machine.Profile, f, req float64, periods int, tol float64, opt mbps.Options) (Row, error) {
	row := Row{Fraction: f, Requested: req, ConvergedS: -1}
	p, err := newPlant(m, cfg.Sim)
	if err != nil {
		return row, err
	}
	n := len(p.ids)
	bw := make([]float64, n)
	values := make([]int, n)
	quotas := make([]float64, n)
	ctl := make([]*mbps.Controller, n)
	for i := range ctl {
		if ctl[i], err = mbps.New(*m.MBA, opt); err != nil {
			return row, err
		}
		values[i], quotas[i] = ctl[i].Setting()
	}
	// the first period unthrottled: each domain's demand, for the split
	p.step(bw)
	shares := mbps.Split(nil, req, bw)
	for i, c := range ctl {
		c.Request(shares[i])
	}
	var hist []float64
	changed := false
	var states []mbps.State
	for t := 0; t < periods; t++ {
		states = states[:0]
		for i, c := range ctl {
			d := c.Observe(bw[i])
			values[i], quotas[i] = d.Value, d.Quota
			changed = changed || d.Changed
			states = append(states, d.State)
		}
		if err := p.set(values, quotas); err != nil {
			return row, err
		}
		p.step(bw)
		a := sum(bw)
		hist = append(hist, a)
		if changed {
			row.Overshoot = math.Max(row.Overshoot, (a-req)/req)
		}
	}
	for t := len(hist) - 1; t >= 0 && math.Abs(hist[t]-req) <= tol*req; t-- {
		row.ConvergedS = t + 1
	}
	k := min(5, len(hist))
	row.Achieved = sum(hist[len(hist)-k:]) / float64(k)
	row.Error = (row.Achieved - req) / req
	row.Values = append([]int(nil), values...)
	row.Quota = sum(quotas) / float64(n)
	row.State = string(worst(states))
	// the plain setting
	nv := Nominal(m, req)
	np, err := newPlant(m, cfg.Sim)
	if err != nil {
		return row, err
	}
	for i := range values {
		values[i], quotas[i] = nv, 1
	}
	if err := np.set(values, quotas); err != nil {
		return row, err
	}
	var nh []float64
	for t := 0; t < 6; t++ {
		nh = append(nh, sum(np.step(bw)))
	}
	row.NominalValue = nv
	row.NominalAchieved = sum(nh[1:]) / float64(len(nh)-1)
	row.NominalError = (row.NominalAchieved - req) / req
	return row, nil
}

// worst is the state that says most about a sweep's end: anything but converged first.
func worst(s []mbps.State) mbps.State {
	for _, x := range s {
		if x != mbps.Converged {
			return x
		}
	}
	if len(s) == 0 {
		return mbps.Off
	}
	return mbps.Converged
}

// Nominal is the plain MBA value that nominally gives req MB/s on socket 0 of m: Intel,
// the percentage of the socket's bandwidth (rounded to the grid); AMD 1/8 GB/s and
// mba_MBps, the request over the socket's cores in the unit (the twin caps each core).
func Nominal(m *machine.Profile, req float64) int {
	mb := m.MBA
	var v float64
	switch mb.Unit {
	case machine.MBAPercent:
		v = 100 * req / m.MemBWPerSocketMBps
	case machine.MBAEighthGBps:
		v = req / float64(m.CoresPerSocket) / 125
	default:
		v = req / float64(m.CoresPerSocket)
	}
	g := max(mb.Gran, 1)
	n := int(math.Round(v/float64(g))) * g
	return min(max(n, mb.Min), mb.Max-g*boolInt(mb.Unit != machine.MBAMBps))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
