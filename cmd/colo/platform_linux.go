package main

// The linux platform registers itself with the orchestrator (`platform: linux` in a
// benchmark YAML); its resctrl mount comes from $COLO_RESCTRL_ROOT or --resctrl-root.
import _ "colo/platform/linux"
