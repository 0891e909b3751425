package resctrl

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DomainValue is one "id=value" of a schemata line.
type DomainValue struct {
	Domain int
	Value  uint64
}

// Line is one schemata line: a resource (L3, L2, L3CODE, L3DATA, L2CODE, L2DATA, MB,
// SMBA) and its values per domain, sorted by domain.
type Line struct {
	Resource string
	Values   []DomainValue
}

// Schemata is the content of a schemata file, or a partial write: only the lines and
// domains to change ("When writing you only need to specify those values which you
// wish to change", kernel resctrl documentation).
type Schemata []Line

// IsBandwidth reports whether a resource's values are decimal bandwidth values (MB,
// SMBA) rather than hexadecimal capacity bitmasks.
func IsBandwidth(resource string) bool { return resource == "MB" || resource == "SMBA" }

// ParseSchemata parses schemata text as any kernel prints it and as users write it:
// resource names may be right-aligned with spaces, masks zero-padded or not, with or
// without "0x", MB values space-padded or not, trailing ";" and blank lines ignored.
// Errors name the line and say what is wrong.
func ParseSchemata(text string) (Schemata, error) {
	var out Schemata
	seen := map[string]bool{}
	for i, raw := range strings.Split(text, "\n") {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		l, err := ParseLine(raw)
		if err != nil {
			return nil, fmt.Errorf("schemata line %d %q: %w", i+1, raw, err)
		}
		if seen[l.Resource] {
			return nil, fmt.Errorf("schemata line %d %q: resource %s given twice; put all its domains on one line", i+1, raw, l.Resource)
		}
		seen[l.Resource] = true
		out = append(out, l)
	}
	return out, nil
}

// ParseLine parses one "RES:id=val;id=val" line.
func ParseLine(s string) (Line, error) {
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Line{}, fmt.Errorf("missing ':' (want RES:id=value;id=value, e.g. L3:0=ff;1=f0)")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return Line{}, fmt.Errorf("missing resource name before ':'")
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return Line{}, fmt.Errorf("resource name %q has character %q", name, r)
		}
	}
	if strings.TrimSpace(rest) == "uninitialized" {
		return Line{}, fmt.Errorf("resource %s is uninitialized (pseudo-lock setup in progress)", name)
	}
	l := Line{Resource: name}
	bw := IsBandwidth(name)
	seen := map[int]bool{}
	for _, part := range strings.Split(rest, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		id, val, ok := strings.Cut(part, "=")
		if !ok {
			return Line{}, fmt.Errorf("domain entry %q has no '=' (want id=value)", part)
		}
		d, err := strconv.Atoi(strings.TrimSpace(id))
		if err != nil || d < 0 {
			return Line{}, fmt.Errorf("domain id %q is not a non-negative decimal number", strings.TrimSpace(id))
		}
		if seen[d] {
			return Line{}, fmt.Errorf("domain %d given twice", d)
		}
		seen[d] = true
		v, err := parseValue(strings.TrimSpace(val), bw)
		if err != nil {
			return Line{}, fmt.Errorf("domain %d: %w", d, err)
		}
		l.Values = append(l.Values, DomainValue{d, v})
	}
	if len(l.Values) == 0 {
		return Line{}, fmt.Errorf("resource %s has no id=value entry", name)
	}
	sort.Slice(l.Values, func(i, j int) bool { return l.Values[i].Domain < l.Values[j].Domain })
	return l, nil
}

func parseValue(s string, bw bool) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty value")
	}
	if bw {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("bandwidth value %q is not a decimal number below 2^32", s)
		}
		return v, nil
	}
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil || h == "" || h[0] == '+' {
		return 0, fmt.Errorf("mask %q is not hexadecimal", s)
	}
	return v, nil
}

// FormatValue prints one value as the kernel expects it on write: hex masks, decimal
// bandwidth.
func FormatValue(resource string, v uint64) string {
	if IsBandwidth(resource) {
		return strconv.FormatUint(v, 10)
	}
	return strconv.FormatUint(v, 16)
}

// String formats one line without a newline: "L3:0=ff;1=f".
func (l Line) String() string {
	var b strings.Builder
	b.WriteString(l.Resource)
	b.WriteByte(':')
	for i, dv := range l.Values {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "%d=%s", dv.Domain, FormatValue(l.Resource, dv.Value))
	}
	return b.String()
}

// String formats the schemata for a write: one line per resource, each ending in "\n".
func (s Schemata) String() string {
	var b strings.Builder
	for _, l := range s {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Get returns the value of resource on domain.
func (s Schemata) Get(resource string, domain int) (uint64, bool) {
	for _, l := range s {
		if l.Resource == resource {
			for _, dv := range l.Values {
				if dv.Domain == domain {
					return dv.Value, true
				}
			}
		}
	}
	return 0, false
}

// Set sets resource on domain, adding the line or domain if needed; it returns s.
func (s Schemata) Set(resource string, domain int, v uint64) Schemata {
	for i := range s {
		if s[i].Resource != resource {
			continue
		}
		for j := range s[i].Values {
			if s[i].Values[j].Domain == domain {
				s[i].Values[j].Value = v
				return s
			}
		}
		s[i].Values = append(s[i].Values, DomainValue{domain, v})
		sort.Slice(s[i].Values, func(a, b int) bool { return s[i].Values[a].Domain < s[i].Values[b].Domain })
		return s
	}
	return append(s, Line{Resource: resource, Values: []DomainValue{{domain, v}}})
}

// Line returns the line of a resource.
func (s Schemata) Line(resource string) (Line, bool) {
	for _, l := range s {
		if l.Resource == resource {
			return l, true
		}
	}
	return Line{}, false
}

// Restrict returns the values of cur for the resources and domains that s names (what
// a partial write will overwrite). Entries cur lacks are left out: the kernel rejects
// a write naming them, so they have no old value to restore.
func (s Schemata) Restrict(cur Schemata) (Schemata, error) {
	var out Schemata
	for _, l := range s {
		for _, dv := range l.Values {
			if v, ok := cur.Get(l.Resource, dv.Domain); ok {
				out = out.Set(l.Resource, dv.Domain, v)
			}
		}
	}
	return out, nil
}

// ParseSpec parses a schemata given on a command line: either schemata text (one
// resource per line) or the compact one-line form where ';' also separates resources,
// e.g. "L3:0=f;1=f0;MB:0=50" (an entry with ':' starts a new resource).
func ParseSpec(s string) (Schemata, error) {
	var lines []string
	for _, raw := range strings.Split(strings.ReplaceAll(s, "\n", ";"), ";") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if strings.Contains(e, ":") || len(lines) == 0 {
			lines = append(lines, e)
			continue
		}
		lines[len(lines)-1] += ";" + e
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("empty schemata: give RES:id=value, e.g. 'L3:0=f;MB:0=50'")
	}
	return ParseSchemata(strings.Join(lines, "\n"))
}
