package main

import (
	"fmt"
	"log/slog"

	"colo/agent"
)

// newDiscovery builds the non-Docker discoveries of colo agent.
func newDiscovery(f agentFlags, log *slog.Logger) (agent.Discovery, error) {
	switch f.runtime {
	case "nri":
		return &agent.NRI{Socket: f.nriSocket, Log: log}, nil
	default:
		return nil, fmt.Errorf("--runtime %s: following plain processes is not supported by colo agent yet; use --runtime docker or nri", f.runtime)
	}
}
