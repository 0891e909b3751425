package main

import (
	"fmt"
	"log/slog"

	"colo/agent"
)

// newDiscovery builds the non-Docker discoveries of colo agent.
func newDiscovery(name string, log *slog.Logger) (agent.Discovery, error) {
	switch name {
	case "nri":
		return nil, fmt.Errorf("--runtime nri: the containerd NRI plugin is not built into this colo yet; use --runtime docker")
	default:
		return nil, fmt.Errorf("--runtime %s: following plain processes is not supported by colo agent yet; use --runtime docker", name)
	}
}
