package main

// The platforms colo run can use; each registers itself with package bench
// (bench.RegisterPlatform). The linux platform adds its import here.
import _ "colo/platform/sim"
