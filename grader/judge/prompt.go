package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
)

// SystemPrompt carries the reference judge's rules: confident matches only, aliases,
// Deployment and Pod equivalence, a chaos-mesh Schedule matching the chaos object it spawns,
// and no match when unsure. Changing it changes every cache key. Its lines are its paragraphs,
// as the judge reads them, so they run past 120 columns.
//
//nolint:lll
const SystemPrompt = `You grade an SRE benchmark. An agent investigated a Kubernetes incident and submitted the entities it believes caused it, each written namespace/Kind/name (cluster-scoped objects as Kind/name or cluster/Kind/name). You get the task's ground truth: groups of Kubernetes objects, each with an id, a kind, a namespace (null: cluster-scoped, or any namespace) and an exact name or name filters, some marked root_cause; and alias sets, groups that stand for the same fault.

For each submitted entity, say which ground-truth group it names, if any:
- Match only when you are confident that the entity is an object of the group: the same kind (kubectl short names, plurals and capitalisation do not matter: deploy, deployments and Deployment are one kind; svc is Service, cm ConfigMap, netpol NetworkPolicy, hpa HorizontalPodAutoscaler), the group's namespace when it has one, and a name the group's name or one of its filters accepts. A filter is a case-insensitive regular expression that must match the whole name (a filter such as checkout-.* also accepts the bare name checkout), except that one starting with .* accepts any name that contains the rest (.*recommendation accepts otel-demo-recommendation-cpu-stress); a filter that is not a valid regular expression, such as *.*, is a shell glob.
- Deployment and Pod are equivalent when the namespace and the workload name correspond: otel-demo/Pod/checkout-8546fdc74d-d68cn and otel-demo/Deployment/checkout name the same workload, and either matches a group of the other kind. ReplicaSets, StatefulSets and DaemonSets go with their Pods in the same way.
- A chaos-mesh Schedule matches the chaos object it spawns (NetworkChaos, PodChaos, StressChaos, HTTPChaos, IOChaos, DNSChaos, TimeChaos, ...), and the chaos object matches its Schedule, when the names correspond: a spawned object is named after its Schedule, often with a timestamp suffix. A chaos object whose name ends in such a timestamp also matches a group of its own kind that names it without the timestamp.
- Cluster-scoped objects (Namespace, Node, PersistentVolume, ClusterRole, ...) match whatever namespace part the entity is written with.
- Honour the aliases: groups of one alias set are the same fault; map the entity to the group of the set that fits it best.
- When several groups fit, choose the one that fits best; a group's id usually names its object.
- When you are unsure, when the entity is not an object of any group, or when it is only related to an object of a group (its caller, its namespace, its node, a similar name), answer null. Never guess.

Reply with one JSON object and nothing else: one key per submitted entity, written exactly as listed, whose value is the id of the group it names, or null.`

// promptGroup is how a ground-truth group is shown to the judge.
type promptGroup struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	Namespace *string  `json:"namespace"`
	Name      string   `json:"name,omitempty"`
	Filters   []string `json:"filters,omitempty"`
	RootCause bool     `json:"root_cause"`
}

// userPrompt states one question: the ground truth's groups and alias sets, and the
// submitted entities, one JSON value a line.
func userPrompt(gt *grader.GroundTruth, entities []string) string {
	var b strings.Builder
	b.WriteString("Ground-truth groups, one JSON object a line:\n")
	b.WriteString(groupLines(gt))
	if aliases := aliasLines(gt); aliases != "" {
		b.WriteString("\nAlias sets, one JSON array of group ids a line:\n")
		b.WriteString(aliases)
	}
	b.WriteString("\nSubmitted entities, one JSON string a line:\n")
	b.WriteString(entityLines(entities))
	fmt.Fprintf(&b, "\nReply with one JSON object mapping each of these %d entities to a group id or null.\n",
		len(entities))
	return b.String()
}

// groupLines shows the ground truth's groups, one JSON object a line.
func groupLines(gt *grader.GroundTruth) string {
	var b strings.Builder
	for _, g := range gt.Groups {
		pg := promptGroup{ID: g.ID, Kind: g.Kind, Name: g.Name, RootCause: g.RootCause}
		if g.Namespace != "" {
			pg.Namespace = &g.Namespace
		}
		for _, f := range g.Filters {
			pg.Filters = append(pg.Filters, f.Pattern)
		}
		b.WriteString(jsonLine(pg))
	}
	return b.String()
}

// aliasLines shows the alias sets, one JSON array a line ("" for none).
func aliasLines(gt *grader.GroundTruth) string {
	var b strings.Builder
	for _, set := range gt.AliasSets() {
		b.WriteString(jsonLine(set))
	}
	return b.String()
}

// entityLines shows the entities, one JSON string a line.
func entityLines(entities []string) string {
	var b strings.Builder
	for _, e := range entities {
		b.WriteString(jsonLine(e))
	}
	return b.String()
}

// jsonLine renders v as one line of JSON, leaving <, > and & as they are.
func jsonLine(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, slices and plain structs always encode, and a Buffer takes them
	return b.String()
}
