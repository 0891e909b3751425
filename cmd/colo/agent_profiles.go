package main

import (
	"fmt"
	"os"

	"colo/agent"
	"colo/predict"
)

// agentPredictor loads --profiles (a `colo predict` data directory) for the agent's
// predicted-slowdown metric; "" gives none.
func agentPredictor(dir string) (*agent.Predictor, error) {
	if dir == "" {
		return nil, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInputf("--profiles %s: not a directory (a colo predict data directory)", dir)
	}
	d, err := predict.LoadDir(os.DirFS(dir), ".", dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("--profiles: %w", err))
	}
	return agent.NewPredictor(d, predict.MethodNearest), nil
}
