package resctrl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Match reports whether the schemata got (what a group's schemata file reads) carries
// every line of want with the same values, the way container runtimes check a
// configured class (runc's libcontainer/intelrdt schema comparison): lines and domains
// in any order, spaces anywhere around names, ids and values, leading zeros
// insignificant ("000f" ≡ "f"), empty entries (";;") ignored, and lines of got that want
// does not name ignored (a kernel shows resources a configuration leaves alone). A
// resource's domain set must be the same on both sides. A malformed want or got is an
// error naming the entry, as is the first difference.
func Match(want, got string) error {
	w, err := matchLines(want)
	if err != nil {
		return fmt.Errorf("wanted schemata: %w", err)
	}
	g, err := matchLines(got)
	if err != nil {
		return fmt.Errorf("read schemata: %w", err)
	}
	for res, wv := range w {
		gv, ok := g[res]
		if !ok {
			return fmt.Errorf("resource %s is not in the schemata read back", res)
		}
		if !maps.Equal(wv, gv) {
			return fmt.Errorf("resource %s: want %s, read %s", res, matchText(wv), matchText(gv))
		}
	}
	return nil
}

// matchLines parses schemata text into resource -> domain -> value (values as numbers:
// hexadecimal for masks, decimal for MB and SMBA).
func matchLines(text string) (map[string]map[int]uint64, error) {
	out := map[string]map[int]uint64{}
	for _, raw := range strings.Split(text, "\n") {
		if strings.Trim(raw, " \t;") == "" {
			continue
		}
		name, rest, ok := strings.Cut(raw, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("line %q has no RESOURCE: prefix", raw)
		}
		vals := map[int]uint64{}
		for _, tok := range strings.Split(rest, ";") {
			if strings.TrimSpace(tok) == "" {
				continue
			}
			id, val, ok := strings.Cut(tok, "=")
			id, val = strings.TrimSpace(id), strings.TrimSpace(val)
			if !ok || id == "" || val == "" || strings.Contains(val, "=") {
				return nil, fmt.Errorf("%s entry %q is not id=value", name, tok)
			}
			d, err := strconv.Atoi(id)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("%s domain id %q is not a number", name, id)
			}
			base := 16
			if IsBandwidth(name) {
				base = 10
			}
			v, err := strconv.ParseUint(strings.TrimPrefix(val, "0x"), base, 64)
			if err != nil {
				return nil, fmt.Errorf("%s domain %d value %q is not a number", name, d, val)
			}
			if _, dup := vals[d]; dup {
				return nil, fmt.Errorf("%s domain %d given twice", name, d)
			}
			vals[d] = v
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("resource %s given twice", name)
		}
		out[name] = vals
	}
	return out, nil
}

func matchText(m map[int]uint64) string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d=%x", d, m[d]))
	}
	return strings.Join(parts, ";")
}
