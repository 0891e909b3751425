package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"colo/internal/emutest"
	"colo/resctrl/emu"

	"github.com/spf13/cobra"
)

// noResults are the commands that print no results of their own (they write files, drive
// something, or redraw a live view); every other command must take --json (docs/json.md).
var noResults = map[string]string{
	"colo completion bash":       "prints a shell script",
	"colo completion fish":       "prints a shell script",
	"colo completion powershell": "prints a shell script",
	"colo completion zsh":        "prints a shell script",
	"colo help":                  "help text",
	"colo export":                "writes files (--format csv, json lines, parquet, influx)",
	"colo report":                "writes an HTML file",
	"colo image build":           "builds a Docker image",
	"colo agent":                 "a daemon; its state is `colo agent status --json` and /api/v1/status",
	"colo agent profiles export": "writes a colo predict data directory",
	"colo stress serve":          "a daemon; its results are its /metrics histogram",
	"colo top":                   "a live view of the agent; the same data is `colo agent status --json`",
}

// jsonRuns are the invocations that check one valid JSON value on stdout, in order (the
// resctrl ones build on each other against one emulator mount, whose directory replaces
// ROOT).
var jsonRuns = []struct {
	path string
	args []string
}{
	{"colo run", []string{"run", "../../examples/thesis/low-demand.yaml", "--no-store", "--scheduler", "least-loaded", "--json"}},
	{"colo compare", []string{"compare", "../../examples/dcat/fig15-mlr-mload.yaml", "--schedulers", "shared,dcat", "--no-store", "--json"}},
	{"colo eval", []string{"eval", "--workload", readmeWorkload, "--masks", "0x600,0x180,0x40,0x20,0x1e,0x1", "--json"}},
	{"colo partition", []string{"partition", "--workload", readmeWorkload, "--policy", "ucp", "--progress", "off", "--json"}},
	{"colo classify", []string{"classify", "--workload", "lbm06,povray06", "--json"}},
	{"colo doctor", []string{"doctor", "--json"}},
	{"colo machine list", []string{"machine", "list", "--json"}},
	{"colo machine show", []string{"machine", "show", "skx-6138", "--json"}},
	{"colo machine detect", []string{"machine", "detect", "--json"}},
	{"colo version", []string{"version", "--json"}},
	{"colo predict validate", []string{"predict", "validate", "--json"}},
	{"colo predict predict", []string{"predict", "predict", "605.mcf_s", "619.lbm_s", "--json"}},
	{"colo predict score", []string{"predict", "score", "--json"}},
	{"colo predict accuracy", []string{"predict", "accuracy", "--workloads", "cpu,mlr:8M", "--json"}},
	{"colo predict profile", []string{"predict", "profile", "--runtime", "sim", "--data", "STATE", "--dials", "0:32:16", "--app", "n6=neighbor:6M:1g", "--app", "n2=neighbor:2M:1g", "--json"}},
	{"colo probe sensitivity", []string{"probe", "sensitivity", "--platform", "sim", "--target", "cpu", "--json"}},
	{"colo stress", []string{"stress", "compute", "--duration", "50ms", "--json"}},
	{"colo mbps sweep", []string{"mbps", "sweep", "--periods", "10", "--json"}},
	{"colo thesis", []string{"thesis", "--dir", "../../examples/thesis", "--json"}},
	{"colo resctrl info", []string{"resctrl", "--root", "ROOT", "info", "--json"}},
	{"colo resctrl set", []string{"resctrl", "--root", "ROOT", "set", "colo.json", "L3:0=ff0;MB:0=55", "--create", "--json"}},
	{"colo resctrl assign", []string{"resctrl", "--root", "ROOT", "assign", "colo.json", "PID", "--json"}},
	{"colo resctrl ls", []string{"resctrl", "--root", "ROOT", "ls", "--json"}},
	{"colo resctrl show", []string{"resctrl", "--root", "ROOT", "show", "colo.json", "--json"}},
	{"colo resctrl mon", []string{"resctrl", "--root", "ROOT", "mon", "colo.json", "--json"}},
	{"colo resctrl rm", []string{"resctrl", "--root", "ROOT", "rm", "colo.json", "--state-dir", "STATE", "--json"}},
	{"colo resctrl reconcile", []string{"resctrl", "--root", "ROOT", "reconcile", "--state-dir", "STATE", "--json"}},
	{"colo cleanup", []string{"cleanup", "--state-dir", "STATE", "--json"}},
	{"colo agent profiles", []string{"agent", "profiles", "--state-dir", "STATE", "--json"}},
}

// leaves lists every runnable command by its full path ("colo machine list").
func leaves(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.Runnable() && c.Annotations["colo.group"] != "true" {
		out = append(out, c)
	}
	for _, s := range c.Commands() {
		out = append(out, leaves(s)...)
	}
	return out
}

// oneJSONValue reports whether s is exactly one JSON value (whitespace around it).
func oneJSONValue(s string) error {
	dec := json.NewDecoder(strings.NewReader(s))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return io.ErrUnexpectedEOF // more after the first value
	}
	return nil
}

// The --json convention (issue 17): every command that prints results takes --json and
// prints one valid JSON value; the table in docs/json.md lists each.
func TestEveryResultCommandPrintsOneJSONValue(t *testing.T) {
	var root string
	var names []string
	for _, c := range leaves(rootCmd) {
		path := c.CommandPath()
		names = append(names, path)
		if _, ok := noResults[path]; ok {
			continue
		}
		if c.Flags().Lookup("json") == nil && c.InheritedFlags().Lookup("json") == nil {
			t.Errorf("%s prints results but takes no --json (or add it to noResults with the reason)", path)
		}
	}
	sort.Strings(names)
	doc := readDoc(t)
	for _, n := range names {
		if _, ok := noResults[n]; ok {
			continue
		}
		if !strings.Contains(doc, "`"+n) {
			t.Errorf("docs/json.md does not list %s", n)
		}
	}
	if emu.FUSEAvailable() == nil {
		root = mountForJSON(t)
	}
	for _, r := range jsonRuns {
		path, args := r.path, r.args
		t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
			if strings.Contains(strings.Join(args, " "), "ROOT") {
				emutest.NeedFUSE(t)
			}
			{
				args = append([]string(nil), args...)
				for i, a := range args {
					switch a {
					case "ROOT":
						args[i] = root
					case "STATE":
						args[i] = t.TempDir()
					case "PID": // the emulator only records the task
						args[i] = strconv.Itoa(os.Getpid())
					}
				}
			}
			var out, errb bytes.Buffer
			if err := execColo(&out, &errb, args...); err != nil {
				t.Fatalf("colo %s: %v\n%s", strings.Join(args, " "), err, errb.String())
			}
			if err := oneJSONValue(out.String()); err != nil {
				t.Errorf("colo %s: stdout is not one JSON value (%v):\n%.400s", strings.Join(args, " "), err, out.String())
			}
			if d := os.Getenv("COLO_JSON_DUMP"); d != "" {
				_ = os.WriteFile(d+"/"+strings.ReplaceAll(path, " ", "_")+".json", out.Bytes(), 0o644)
			}
			checkVocabulary(t, path, out.String())
		})
	}
	for _, r := range jsonRuns {
		if !containsStr(names, r.path) {
			t.Errorf("jsonRuns names %q, which is not a command", r.path)
		}
	}
}

func readDoc(t *testing.T) string {
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// mountForJSON mounts the resctrl emulator for the resctrl commands (unmounted at the end
// of the test).
func mountForJSON(t *testing.T) string {
	_, dir := emutest.MountNamed(t, "intel", emu.Options{})
	return dir
}
