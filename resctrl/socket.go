package resctrl

import (
	"fmt"

	"colo/machine"
)

// SocketDomains returns the resctrl L3 domain ids of one socket: the socket number on
// Intel (one L3 per socket), the ids of the socket's CCXs on AMD (domains numbered
// socket-major, DomainsPerSocket per socket). MB domains follow the L3 domains.
func SocketDomains(m *machine.Profile, socket int) ([]int, error) {
	if m == nil || socket < 0 || socket >= m.Sockets {
		return nil, fmt.Errorf("resctrl: socket %d out of range for machine %v", socket, machineName(m))
	}
	per := max(m.LLC.DomainsPerSocket, 1)
	out := make([]int, per)
	for i := range out {
		out[i] = socket*per + i
	}
	return out, nil
}

func machineName(m *machine.Profile) string {
	if m == nil {
		return "<nil>"
	}
	return m.Name
}

// SocketAllocation is the partial schemata that gives L3 mask `mask` and memory
// bandwidth `mb` (in the mount's MB unit; 0 leaves MB alone) on every domain of one
// socket, the shape a placement decision "these ways and this bandwidth on socket s"
// takes on the machine's resctrl.
func SocketAllocation(m *machine.Profile, socket int, mask uint64, mb int) (Schemata, error) {
	doms, err := SocketDomains(m, socket)
	if err != nil {
		return nil, err
	}
	if mask == 0 && m.CAT.MinCBMBits > 0 {
		return nil, fmt.Errorf("resctrl: an empty L3 mask is not allowed on %s (min_cbm_bits %d); remove the group instead", m.Name, m.CAT.MinCBMBits)
	}
	if full := m.FullMask(); mask&^full != 0 {
		return nil, fmt.Errorf("resctrl: mask %x exceeds the %d ways of %s (cbm_mask %x)", mask, m.LLC.Ways, m.Name, full)
	}
	var s Schemata
	for _, d := range doms {
		s = s.Set("L3", d, mask)
	}
	if mb > 0 {
		if m.MBA == nil {
			return nil, fmt.Errorf("resctrl: machine %s has no MBA; give mb 0", m.Name)
		}
		for _, d := range doms {
			s = s.Set("MB", d, uint64(mb))
		}
	}
	return s, nil
}
