package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The vocabulary of every --json output (issue 31): keys are snake_case; a number's unit
// is in its key's suffix (unitSuffixes) or its key is in docs/json.md's "Keys and units"
// table, which names the unit once for every command; a key whose unit is "fraction"
// holds a number in [0, 1] wherever it appears.

// dataKeyPaths are the places where an object's keys are data (job, metric, scheduler or
// file names), not vocabulary: "<command>:<path>", the path's array steps written [].
var dataKeyPaths = map[string]bool{
	"colo run:schedulers[].jobs_by_state":                   true,
	"colo run:schedulers[].notes_by_scheduler":              true,
	"colo compare:schedulers[].metrics":                     true,
	"colo predict validate:scores":                          true,
	"colo predict validate:recorded_scores":                 true,
	"colo predict validate:methods":                         true,
	"colo predict score:scores":                             true,
	"colo resctrl info:resources":                           true,
	"colo agent status:policy_counts":                       true,
	"colo agent status:default_masks":                       true,
	"colo predict validate:thesis_expected.inferred_scores": true,
	"colo predict validate:measurement_columns":             true,
}

// unitSuffixes are the key endings that name a unit (docs/json.md "Keys and units").
var unitSuffixes = []string{
	"_s", "_seconds", "_ms", "_ns", "_bytes", "_mb", "_mbps", "_ghz", "_ways", "_ticks",
	"_total", "_per_minute", "_per_s", "_pp", "_percent", "_count", "_cores",
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// glossaryRow is one row of docs/json.md's "Keys and units" table.
type glossaryRow struct{ unit, meaning string }

// readGlossary parses docs/json.md's "Keys and units" table: | `key` | unit | meaning |.
func readGlossary(t *testing.T) map[string]glossaryRow {
	doc := readDoc(t)
	i := strings.Index(doc, "## Keys and units")
	if i < 0 {
		t.Fatal(`docs/json.md has no "## Keys and units" section`)
	}
	sec := doc[i+len("## Keys and units"):]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	g := map[string]glossaryRow{}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		unit, meaning := strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])
		for _, k := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			g[k[1]] = glossaryRow{unit, meaning}
		}
	}
	return g
}

// vocabProblem walks one JSON value and returns what breaks the convention: keys not in
// snake_case, numbers whose key names no unit and is not in the glossary, fractions out of
// [0, 1]. used collects every key seen (for the table's check the other way).
func vocabProblems(cmd string, v any, g map[string]glossaryRow, used map[string]bool) []string {
	var out []string
	var walk func(path, key string, v any)
	walk = func(path, key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			data := dataKeyPaths[cmd+":"+path]
			for k, e := range x {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if data {
					walk(p, key, e) // the key is data: the unit is the enclosing key's
					continue
				}
				if !snakeCase.MatchString(k) {
					out = append(out, fmt.Sprintf("%s: key %q is not snake_case", p, k))
				}
				used[k] = true
				walk(p, k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", key, e)
			}
		case float64:
			if key == "" {
				return
			}
			row, inTable := g[key]
			if !inTable && !hasUnitSuffix(key) {
				out = append(out, fmt.Sprintf("%s: number key %q names no unit and is not in docs/json.md \"Keys and units\"", path, key))
			}
			if inTable && row.unit == "fraction" && (x < 0 || x > 1) {
				out = append(out, fmt.Sprintf("%s = %v: %q is a fraction in [0, 1]", path, x, key))
			}
		}
	}
	walk("", "", v)
	seen := map[string]bool{}
	var once []string // one message per problem key, not per array element
	for _, o := range out {
		k := o
		if i := strings.Index(o, ": "); i >= 0 {
			k = strings.NewReplacer("[]", "").Replace(o[:i]) + o[strings.Index(o, ": "):]
		}
		if !seen[k] {
			seen[k] = true
			once = append(once, o)
		}
	}
	return once
}

func hasUnitSuffix(k string) bool {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// docRowKeys returns the keys a docs/json.md table row names for command path (every
// `key` in its output column), and whether the row exists.
func docRowKeys(doc, path string) ([]string, bool) {
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`"+path) {
			continue
		}
		var ks []string
		for _, m := range regexp.MustCompile("`([a-z0-9_]+)`").FindAllStringSubmatch(strings.Join(cells[3:], "|"), -1) {
			ks = append(ks, m[1])
		}
		return ks, true
	}
	return nil, false
}

// topKeys are the keys at the top of a JSON value (of its elements for an array).
func topKeys(v any) map[string]bool {
	out := map[string]bool{}
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			out[k] = true
		}
	case []any:
		for _, e := range x {
			for k := range topKeys(e) {
				out[k] = true
			}
		}
	}
	return out
}

// checkVocabulary holds one command's --json output to the convention and to its row in
// docs/json.md, both ways: every top-level key is named in the row, every key the row names
// is printed somewhere in the output.
func checkVocabulary(t *testing.T, path, stdout string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		return // oneJSONValue reports it
	}
	g := readGlossary(t)
	used := map[string]bool{}
	for _, p := range vocabProblems(path, v, g, used) {
		t.Error(p)
	}
	doc := readDoc(t)
	row := path
	if s, ok := sameDocAs[path]; ok {
		row = s
	}
	named, ok := docRowKeys(doc, row)
	if !ok {
		t.Errorf("docs/json.md has no row for %s", path)
		return
	}
	in := map[string]bool{}
	empty := false
	if a, ok := v.([]any); ok && len(a) == 0 {
		empty = true // nothing to hold the row's keys to (cleanup with nothing dead)
	}
	for _, k := range named {
		in[k] = true
		if !empty && !used[k] && !optionalDocKeys[path+":"+k] {
			t.Errorf("docs/json.md's row for %s names `%s`, which it does not print", path, k)
		}
	}
	var missing []string
	for k := range topKeys(v) {
		if !in[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	for _, k := range missing {
		t.Errorf("%s prints top-level key %q, which its docs/json.md row does not name", path, k)
	}
}

// sameDocAs are the commands whose docs/json.md row says they print another's document.
var sameDocAs = map[string]string{
	"colo partition":      "colo eval",
	"colo machine list":   "colo machine show",
	"colo machine detect": "colo machine show",
}

// optionalDocKeys are keys a row names that this test's invocation does not print (another
// flag or platform prints them): "<command>:<key>".
var optionalDocKeys = map[string]bool{
	"colo run:run_dir":         true, // --no-store here
	"colo run:comparison":      true, // one scheduler here
	"colo run:influx":          true, // no data.db here
	"colo compare:run_dir":     true,
	"colo machine detect:mba":  true, // a host without MBA
	"colo thesis:colo_mean":    true, // --repeat N
	"colo thesis:colo_ci95_lo": true, "colo thesis:colo_ci95_hi": true, "colo thesis:n": true,
	"colo thesis:thesis_inside_ci": true,
	"colo resctrl mon:unavailable": true, // only when an event could not be read
	// the guard's keys: only when a job has slo_ms or antagonist (docs/controllers.md)
	"colo compare:slo_ms": true, "colo compare:antagonist": true, "colo compare:slo_violation_seconds": true,
	"colo compare:slo_violation_seconds_after_first_window": true, "colo compare:be_throughput": true,
	"colo compare:utilization": true, "colo compare:antagonist_precision": true, "colo compare:throttles": true,
}

// The glossary is well formed: every unit is one of the known ones and every key in it is
// snake_case with a meaning.
func TestJSONGlossaryWellFormed(t *testing.T) {
	g := readGlossary(t)
	if len(g) < 20 {
		t.Fatalf("docs/json.md \"Keys and units\" has %d keys", len(g))
	}
	for k, r := range g {
		if !snakeCase.MatchString(k) {
			t.Errorf("glossary key %q is not snake_case", k)
		}
		if r.unit == "" || r.meaning == "" {
			t.Errorf("glossary key %q: unit %q, meaning %q: both are needed", k, r.unit, r.meaning)
		}
		if r.unit == "%" || strings.Contains(r.unit, "percent") {
			t.Errorf("glossary key %q is a percent: JSON ratios are fractions in [0, 1]", k)
		}
	}
}
