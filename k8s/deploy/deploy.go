// Package deploy holds colo's Kubernetes manifests (a kustomize base in base/) and embeds
// them, so that the tests apply exactly the files users deploy.
package deploy

import "embed"

// Base is the kustomize base: CRD, RBAC, agent DaemonSet, scheduler Deployment and its
// KubeSchedulerConfiguration.
//
//go:embed base/*.yaml
var Base embed.FS

// CRD is the path in Base of the NodeInterference CustomResourceDefinition.
const CRD = "base/crd.yaml"
