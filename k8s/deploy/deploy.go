// Package deploy holds colo's Kubernetes manifests and embeds them, so that the tests apply
// exactly the files users deploy: base/ (CRD, agent DaemonSet with its publisher, RBAC)
// and two kustomizations on top of it, scheduler/ (colo-kube-scheduler running the
// colo-scheduler profile) and extender/ (colo-kube extender for an existing scheduler).
package deploy

import "embed"

// FS holds base/, scheduler/ and extender/.
//
//go:embed base/*.yaml scheduler/*.yaml extender/*.yaml
var FS embed.FS

// Paths in FS.
const (
	CRD             = "base/crd.yaml"
	ProfileCRD      = "base/coloprofile-crd.yaml" // ColoProfile (k8s/profilecrd)
	SchedulerConfig = "scheduler/scheduler.yaml"  // its ConfigMap colo-scheduler-config holds config.yaml
)

// Dirs are the kustomization directories in FS.
var Dirs = []string{"base", "scheduler", "extender"}
