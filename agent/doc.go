// Package agent is colo's node daemon: it follows containers it did not start (Docker
// events, containerd NRI, plain cgroups), gives each one resctrl monitoring, lets the same
// schedulers that `colo run` uses decide their cache and bandwidth allocations, applies
// them through the resctrl client, and exposes everything over HTTP (Prometheus /metrics,
// a JSON API under /api/v1/).
//
// It is split along its seam:
//
//   - agent/core: the pure decision core (containers, samples and a clock in; the state it
//     wants out).
//   - agent (this package): the loop — discovery events and a ticker feed the core, its
//     plan goes to resctrl through the group planner, the journal records every group.
//   - agent/discovery and its docker, nri and process subpackages: the container sources.
//   - agent/host: a container's threads and counters on Linux (cgroups, perf).
//   - agent/api: the status the loop publishes, its HTTP handler and Prometheus collector.
//   - agent/profiling, agent/profiler: online profiling (colo agent --profile).
package agent
