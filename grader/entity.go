package grader

import (
	"regexp"
	"strings"
)

// Entity is one submitted root-cause candidate, parsed from `namespace/Kind/name` (rule 1).
type Entity struct {
	Raw       string // as submitted
	Namespace string // empty when the entity was written as Kind/name
	Kind      string // canonical kind (see canonicalKind)
	Name      string
	Parsed    bool // false when Raw has not two or three parts; such an entity matches nothing
	// Workload is the name of the workload owning a workload object (rule 3), and for a chaos
	// object the name of the Schedule that may have spawned it (rule 4); Name otherwise.
	Workload string
}

// ParseEntity reads `namespace/Kind/name` or `Kind/name` (rule 1). Surrounding spaces and
// slashes are trimmed and each part is trimmed of spaces. Any other shape is kept as an
// unparsed entity: it still counts as a prediction, and matches no group.
func ParseEntity(raw string) Entity {
	e := Entity{Raw: raw}
	s := strings.Trim(strings.TrimSpace(raw), "/ \t")
	parts := strings.Split(s, "/")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	switch len(parts) {
	case 3:
		e.Namespace, e.Kind, e.Name = parts[0], canonicalKind(parts[1]), parts[2]
	case 2:
		e.Kind, e.Name = canonicalKind(parts[0]), parts[1]
	default:
		e.Name = s
		return e
	}
	e.Parsed = e.Kind != "" && e.Name != ""
	switch {
	case workloadKinds[e.Kind]:
		e.Workload = workloadName(e.Kind, e.Name)
	case isChaosKind[e.Kind]:
		e.Workload = chaosScheduleName(e.Name)
	default:
		e.Workload = e.Name
	}
	return e
}

// namesKnownKind reports whether raw reads as `namespace/Kind/name` or `Kind/name` with a kind
// the grader knows, which a file path (`metrics/pod_cart_raw.tsv`) or a word does not.
func namesKnownKind(raw string) bool {
	e := ParseEntity(raw)
	_, known := kindByLowerName[strings.ToLower(e.Kind)]
	return e.Parsed && known
}

// Key is the normalised form used to count identical entities once: case-folded namespace
// and name, canonical kind.
func (e Entity) Key() string {
	if !e.Parsed {
		return "?" + strings.ToLower(strings.Trim(strings.TrimSpace(e.Raw), "/ \t"))
	}
	return strings.ToLower(e.Namespace) + "/" + e.Kind + "/" + strings.ToLower(e.Name)
}

// Kubernetes derives generated name suffixes from this alphabet (k8s.io/apimachinery
// rand.SafeEncodeString): no vowels, no 0, 1 or 3, so a suffix is recognisable.
//
// The rule is strict on purpose: only a suffix Kubernetes could have generated is dropped, so
// `checkout-7f9c8d6b5-x2k4p` reduces to `checkout` while `checkout-7f9c8d6b5-abcde` stays as
// written (it then matches a group only by its full name, as a `checkout-.*` Pod group does).
// Every generated suffix in a snapshot, which is where agents copy names from, uses this
// alphabet, so strictness costs nothing on real names; a lenient rule (any 5-character
// suffix, any 6 to 10 character hash) would also cut real words off real names
// (`frontend-proxy` -> `frontend`, `otel-collector-agent` -> `otel`) and could credit them to
// another workload's root cause. The price: an invented suffix does not reduce, where the LLM
// judge might still see the workload.
const k8sSuffixChars = `[bcdfghjklmnpqrstvwxz2456789]`

var (
	// checkout-8546fdc74d-d68cn: Deployment name, pod-template-hash, pod suffix.
	replicaSetPodName = regexp.MustCompile(`^(.+)-` + k8sSuffixChars + `{6,10}-` + k8sSuffixChars + `{5}$`)
	// kafka-0: StatefulSet name and ordinal.
	statefulSetPodName = regexp.MustCompile(`^(.+)-[0-9]+$`)
	// node-exporter-x7k2p: DaemonSet (or Job) name and pod suffix.
	daemonSetPodName = regexp.MustCompile(`^(.+)-` + k8sSuffixChars + `{5}$`)
	// checkout-8546fdc74d: Deployment name and pod-template-hash.
	replicaSetName = regexp.MustCompile(`^(.+)-` + k8sSuffixChars + `{6,10}$`)
)

// workloadName reduces a workload object's name to the name of the workload that owns it
// (rule 3): a Pod loses its ReplicaSet hash and pod suffix (or StatefulSet ordinal, or
// DaemonSet suffix), a ReplicaSet its hash. Other kinds, and names that carry no suffix
// Kubernetes could have generated (see k8sSuffixChars), come back unchanged.
func workloadName(kind, name string) string {
	var patterns []*regexp.Regexp
	switch kind {
	case "Pod":
		patterns = []*regexp.Regexp{replicaSetPodName, statefulSetPodName, daemonSetPodName}
	case "ReplicaSet":
		patterns = []*regexp.Regexp{replicaSetName}
	}
	lower := strings.ToLower(name)
	for _, p := range patterns {
		if m := p.FindStringSubmatch(lower); m != nil {
			return name[:len(m[1])]
		}
	}
	return name
}

// Chaos Mesh names the objects a Schedule spawns `<schedule>-<unix time>`.
var spawnedChaosName = regexp.MustCompile(`^(.+)-[0-9]+$`)

// chaosScheduleName reduces the name of a chaos object spawned by a chaos-mesh Schedule to
// the Schedule's name (rule 4). It applies to every chaos kind and whichever group the object
// is matched with: ground truths often name the chaos object rather than its Schedule
// (Scenario-21's StressChaos otel-demo-valkey-memory-stress), and an agent may name the
// spawned object it saw, timestamp included.
func chaosScheduleName(name string) string {
	if m := spawnedChaosName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}
