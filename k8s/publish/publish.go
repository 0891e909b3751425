// Package publish builds a node's interference state (package nodestate) from what the
// node agent reports on its JSON API (GET /api/v1/status) or from a static list of
// residents, and writes it to the API server as the node annotation colo.io/interference
// and as the node's NodeInterference object.
package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"colo/k8s/nodestate"
	"colo/k8s/placement"
	"colo/k8s/scoring"
)

// AgentStatus is the part of the agent's GET /api/v1/status this publisher reads (the
// agent's JSON field names; see docs/agent.md).
type AgentStatus struct {
	Sockets    int              `json:"sockets"`
	LLCWays    int              `json:"llc_ways"`
	Containers []AgentContainer `json:"containers"`
	Counts     map[string]int   `json:"counts"`
	Updated    time.Time        `json:"updated"`
}

// AgentContainer is one managed container of the agent's status.
type AgentContainer struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Image   string `json:"image"`
	Request struct {
		Class      string  `json:"class"`
		TargetIPCE float64 `json:"target_ipce"`
	} `json:"request"`
	State     string `json:"state"`
	Socket    int    `json:"socket"`
	Ways      int    `json:"ways"`
	MBA       int    `json:"mba"`
	CtrlGroup string `json:"ctrl_group"`
}

// FetchAgent reads GET <base>/api/v1/status.
func FetchAgent(ctx context.Context, base string) (AgentStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/status", nil)
	if err != nil {
		return AgentStatus{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return AgentStatus{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return AgentStatus{}, fmt.Errorf("%s: HTTP %d: %s", req.URL, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var st AgentStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return AgentStatus{}, fmt.Errorf("%s: %w", req.URL, err)
	}
	return st, nil
}

// ProfileOf finds a container's profile in the library: an explicit mapping (container
// name → profile) first, then the container's name, then its image's last path element
// without tag ("" if none matches: an unprofiled resident). A container the agent found
// through NRI in a Kubernetes pod is named namespace/pod/container: its own name (the
// last element, the same in every replica) is tried after the full one.
func ProfileOf(lib *placement.Library, mapping map[string]string, c AgentContainer) string {
	names := []string{c.Name}
	if i := strings.LastIndexByte(c.Name, '/'); i >= 0 {
		names = append(names, c.Name[i+1:])
	}
	for _, n := range names {
		if p, ok := mapping[n]; ok {
			return p
		}
	}
	for _, n := range names {
		if _, ok := lib.Profiles[n]; ok {
			return n
		}
	}
	img := path.Base(c.Image)
	if i := strings.IndexAny(img, ":@"); i >= 0 {
		img = img[:i]
	}
	if _, ok := lib.Profiles[img]; ok {
		return img
	}
	return ""
}

// FromAgent builds the node's state from the agent's status: every running container is a
// resident (class and target from its labels, profile from ProfileOf); per socket, the
// free ways are the LLC's ways minus those masked to priority containers there, the free
// MBA 100 % minus the containers' MBA settings, and the CLOSIDs left (a machine-wide
// budget, the same on every socket) closids − 1 (default group) − the control groups in
// use, 0 once the agent counted an exhaustion.
func FromAgent(st AgentStatus, lib *placement.Library, node string, mapping map[string]string, closids int, now time.Time) nodestate.State {
	s := nodestate.State{FormatVersion: nodestate.FormatVersion, Node: node, Updated: now.UTC(), Source: "agent; profiles " + lib.Source, DialsMB: lib.Dials}
	groups := map[string]bool{}
	ways := map[int]int{}
	mba := map[int]int{}
	for _, c := range st.Containers {
		if c.State != "" && c.State != "running" {
			continue
		}
		class := c.Request.Class
		if !nodestate.ValidClass(class) {
			class = "batch"
		}
		t := lib.Tenant(c.Name, class, c.Request.TargetIPCE, ProfileOf(lib, mapping, c))
		s.Residents = append(s.Residents, t.Resident("", c.Socket))
		if c.CtrlGroup != "" {
			groups[c.CtrlGroup] = true
		}
		if class == "priority" {
			ways[c.Socket] += c.Ways
		}
		mba[c.Socket] += c.MBA
	}
	left := closids - 1 - len(groups)
	if left < 0 || st.Counts["closid_exhausted"] > 0 {
		left = 0
	}
	for so := 0; so < max(st.Sockets, 1); so++ {
		s.Sockets = append(s.Sockets, nodestate.Socket{ID: so, FreeWays: max(st.LLCWays-ways[so], 0), FreeMBA: min(max(100-mba[so], 0), 100), CLOSIDsLeft: left})
	}
	return s
}

// ParseResident reads NAME=PROFILE[:CLASS[:TARGET]] (a static resident).
func ParseResident(lib *placement.Library, spec string) (nodestate.Resident, error) {
	name, rest, ok := strings.Cut(spec, "=")
	if !ok || name == "" || rest == "" {
		return nodestate.Resident{}, fmt.Errorf("resident %q: want NAME=PROFILE[:CLASS[:TARGET]]", spec)
	}
	parts := strings.Split(rest, ":")
	class, target := "batch", 0.0
	if len(parts) > 1 {
		class = parts[1]
		if !nodestate.ValidClass(class) {
			return nodestate.Resident{}, fmt.Errorf("resident %q: class %q, want one of %v", spec, class, nodestate.Classes)
		}
	}
	if len(parts) > 2 {
		f, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || !(f > 0 && f <= 1) {
			return nodestate.Resident{}, fmt.Errorf("resident %q: target %q, want a fraction in (0, 1]", spec, parts[2])
		}
		target = f
	}
	if _, ok := lib.Profiles[parts[0]]; !ok {
		return nodestate.Resident{}, fmt.Errorf("resident %q: profile %q not in %s (have %s)", spec, parts[0], lib.Source, strings.Join(lib.Names(), ", "))
	}
	return lib.Tenant(name, class, target, parts[0]).Resident("", 0), nil
}

// Writer writes states to the API server.
type Writer struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Annotation and Object choose the targets (both by default).
	Annotation, Object bool
}

// FieldManager names this writer in server-side apply.
const FieldManager = "colo-publish"

// Write publishes the state: a merge patch of the node's annotation and a server-side
// apply of its NodeInterference object. Both are whole-document writes, so a reader never
// sees half a state.
func (w Writer) Write(ctx context.Context, s nodestate.State) error {
	doc, err := nodestate.Marshal(s)
	if err != nil {
		return fmt.Errorf("state of node %s: %w", s.Node, err)
	}
	if w.Annotation {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{nodestate.Annotation: string(doc)}}})
		if _, err := w.Client.CoreV1().Nodes().Patch(ctx, s.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("annotating node %s: %w", s.Node, err)
		}
	}
	if w.Object {
		var spec map[string]any
		if err := json.Unmarshal(doc, &spec); err != nil {
			return err
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": nodestate.Group + "/" + nodestate.Version, "kind": nodestate.Kind,
			"metadata": map[string]any{"name": s.Node}, "spec": spec}}
		if _, err := w.Dynamic.Resource(scoring.GVR).Apply(ctx, s.Node, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", nodestate.Kind, s.Node, err)
		}
	}
	return nil
}

// SortResidents orders residents by name (stable output for the same input).
func SortResidents(s *nodestate.State) {
	sort.SliceStable(s.Residents, func(i, j int) bool { return s.Residents[i].Name < s.Residents[j].Name })
}
