package main

// The platforms colo run can use; each registers itself with package bench
// (bench.RegisterPlatform).
import (
	_ "colo/platform/linux"
	_ "colo/platform/sim"
)
