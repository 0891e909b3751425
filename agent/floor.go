package agent

import (
	"colo/machine"
	"colo/resctrl"
)

// AdminMask is the administrator's system/default L3 mask from its schemata text: the
// ways it holds on every L3 domain (a way excluded on one domain is treated as excluded);
// the whole cache when the text has no L3 line.
func AdminMask(m *machine.Profile, schemata string) uint64 {
	full := m.FullMask()
	s, err := resctrl.ParseSchemata(schemata)
	if err != nil {
		return full
	}
	mask, seen := full, false
	for _, l := range s {
		if l.Resource != "L3" && l.Resource != "L3CODE" && l.Resource != "L3DATA" {
			continue
		}
		for _, v := range l.Values {
			mask &= v.Value
			seen = true
		}
	}
	if !seen || mask == 0 {
		return full
	}
	return mask
}
