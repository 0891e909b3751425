package main

import (
	"fmt"
	"log/slog"

	"colo/agent"
)

// newDiscovery builds the non-Docker discoveries of colo agent.
func newDiscovery(f agentFlags, log *slog.Logger) (agent.Discovery, error) {
	if f.runtime != "nri" {
		return nil, fmt.Errorf("--runtime %s: not a runtime colo agent follows; use docker or nri", f.runtime)
	}
	return &agent.NRI{Socket: f.nriSocket, Log: log}, nil
}
