package grader

import "strings"

// Kinds the matcher knows by name. Models write kinds the way kubectl accepts them (short
// names, plurals, any capitalisation, sometimes with an API group such as "deployments.apps"),
// while ground truths use the exact Kubernetes kind; canonicalKind maps the former to the latter.
var knownKinds = []string{
	"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob",
	"Service", "Endpoints", "EndpointSlice", "Ingress", "ConfigMap", "Secret", "ServiceAccount",
	"NetworkPolicy", "HorizontalPodAutoscaler", "PodDisruptionBudget",
	"Namespace", "Node", "ResourceQuota", "LimitRange",
	"PersistentVolumeClaim", "PersistentVolume", "StorageClass",
	"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
	"ServiceOperation", // an ITBench pseudo-kind: one operation of a service
	"Schedule", "Workflow",
}

// chaosKinds are the chaos-mesh kinds; rule 4 lets a Schedule stand for any of them.
var chaosKinds = []string{
	"NetworkChaos", "PodChaos", "StressChaos", "HTTPChaos", "JVMChaos", "IOChaos", "TimeChaos",
	"DNSChaos", "KernelChaos", "AWSChaos", "GCPChaos", "AzureChaos", "BlockChaos",
	"PhysicalMachineChaos",
}

// kubectlShortNames are the short names kubectl registers for the built-in kinds.
var kubectlShortNames = map[string]string{
	"po": "Pod", "deploy": "Deployment", "rs": "ReplicaSet", "sts": "StatefulSet",
	"ds": "DaemonSet", "cj": "CronJob", "svc": "Service", "ep": "Endpoints", "ing": "Ingress",
	"cm": "ConfigMap", "sa": "ServiceAccount", "netpol": "NetworkPolicy",
	"hpa": "HorizontalPodAutoscaler", "pdb": "PodDisruptionBudget", "ns": "Namespace",
	"no": "Node", "quota": "ResourceQuota", "limits": "LimitRange", "pvc": "PersistentVolumeClaim",
	"pv": "PersistentVolume", "sc": "StorageClass",
}

// workloadKinds match each other under rule 3 (Deployment/Pod equivalence).
var workloadKinds = map[string]bool{
	"Pod": true, "Deployment": true, "ReplicaSet": true, "StatefulSet": true, "DaemonSet": true,
}

// IsWorkloadKind reports whether a canonical kind runs a service's code (rule 3's kinds):
// what a service of the traces' call topology can be.
func IsWorkloadKind(kind string) bool { return workloadKinds[kind] }

// IsClusterScoped reports whether objects of a canonical kind have no namespace.
func IsClusterScoped(kind string) bool { return clusterScopedKinds[kind] }

// clusterScopedKinds have no namespace: the namespace part of an entity naming one is ignored.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "StorageClass": true,
	"ClusterRole": true, "ClusterRoleBinding": true,
}

var isChaosKind = map[string]bool{}

// kindByLowerName maps every accepted spelling (lower case) to the canonical kind.
var kindByLowerName = map[string]string{}

func init() {
	for _, k := range chaosKinds {
		isChaosKind[k] = true
	}
	for _, k := range append(append([]string{}, knownKinds...), chaosKinds...) {
		l := strings.ToLower(k)
		for _, spelling := range []string{l, l + "s", l + "es"} {
			kindByLowerName[spelling] = k
		}
		if stem, ok := strings.CutSuffix(l, "y"); ok {
			kindByLowerName[stem+"ies"] = k // networkpolicies
		}
	}
	kindByLowerName["httpchaos"] = "HTTPChaos" // ground truths also spell it HttpChaos
	for short, k := range kubectlShortNames {
		kindByLowerName[short] = k
	}
}

// canonicalKind returns the Kubernetes kind for any spelling kubectl or a model might use:
// case-insensitive, short names and plurals, an API group suffix ("deployments.apps") dropped.
// Unknown kinds come back as written, so they still compare equal to themselves
// (case-insensitively, through kindsEqual).
func canonicalKind(s string) string {
	s = strings.TrimSpace(s)
	l := strings.ToLower(s)
	if k, ok := kindByLowerName[l]; ok {
		return k
	}
	if base, _, ok := strings.Cut(l, "."); ok {
		if k, ok := kindByLowerName[base]; ok {
			return k
		}
	}
	return s
}

// kindsEqual compares two canonical kinds, case-insensitively for unknown kinds.
func kindsEqual(a, b string) bool { return strings.EqualFold(a, b) }
