package analysis

import (
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
)

// False-positive classes: why an entity that is no root cause was wrong (docs/analysis.md).
const (
	ClassSymptom   = "symptom"   // a ground-truth group that alerts or ends the propagation chain
	ClassMechanism = "mechanism" // a ground-truth group between the cause and the symptoms
	ClassNearMiss  = "near_miss" // a root cause's object under a wrong kind or namespace, or a sibling of it
	ClassUnrelated = "unrelated" // none of the above
)

// Classes lists the classes in the order reports show them.
var Classes = []string{ClassSymptom, ClassMechanism, ClassNearMiss, ClassUnrelated}

// Partial credit (docs/analysis.md): an entity at distance d from a root cause on the fault
// graph earns 2^-d of it, nothing beyond maxCreditDistance; a near miss earns nearMissCredit.
const (
	maxCreditDistance = 3
	nearMissCredit    = 0.5
)

// Key is one task's ground truth seen as a fault graph: its scoring sets (groups merged by
// aliases) joined by the propagation steps and by the calls the traces show between the
// services the sets stand for, with each set's distance from each root cause and the class
// of each set that is no root cause.
type Key struct {
	gt    *grader.GroundTruth
	roots []int   // the root-cause scoring sets
	dist  [][]int // dist[r][s]: edges from roots[r] to set s on the undirected graph; -1 unreachable
	adj   [][]int // each set's neighbours on the undirected graph
	edges int     // the undirected graph's edges
	// services are the call topology's services (none without one); chain marks those that
	// stand for a set on the fault's chain (see propagation.go).
	services []string
	chain    map[string]bool
	class    []string
	// broad marks the groups whose name rule accepts any name (Scenario-38's `*.*`): they
	// say nothing about which object was meant, so they give no near miss and no mention.
	broad []bool
}

// NewKey builds the fault graph of a ground truth; topo (nil: none) adds the call topology.
func NewKey(gt *grader.GroundTruth, topo *Topology) *Key {
	k := &Key{gt: gt, broad: make([]bool, len(gt.Groups))}
	for i := range gt.Groups {
		k.broad[i] = gt.MatchesGroup(variant(gt.Groups[i], "zq9-no-such-object-x7"), i)
	}
	n := gt.Sets()
	for s := range n {
		if gt.IsRootSet(s) {
			k.roots = append(k.roots, s)
		}
	}
	undirected := make([][]int, n)
	directed := make([][]int, n)
	link := func(a, b int) {
		if a != b && !slices.Contains(undirected[a], b) {
			undirected[a] = append(undirected[a], b)
			undirected[b] = append(undirected[b], a)
			k.edges++
		}
	}
	for _, p := range gt.Propagations {
		src, dst := k.setOfID(p.Source), k.setOfID(p.Target)
		if src < 0 || dst < 0 || src == dst {
			continue
		}
		link(src, dst)
		if !slices.Contains(directed[src], dst) {
			directed[src] = append(directed[src], dst)
		}
	}
	var serves map[string][]int
	if topo != nil {
		k.services = make([]string, len(topo.Services))
		for i, svc := range topo.Services {
			k.services[i] = strings.ToLower(svc)
		}
		serves = k.servicesOfSets(topo)
		for _, call := range topo.Calls {
			for _, a := range serves[call[0]] {
				for _, b := range serves[call[1]] {
					link(a, b)
				}
			}
		}
		for _, sets := range serves { // sets that stand for one service are next to each other
			for _, a := range sets {
				for _, b := range sets {
					link(a, b)
				}
			}
		}
	}
	k.adj = undirected
	for _, r := range k.roots {
		k.dist = append(k.dist, distances(undirected, r))
	}
	reached := k.reachedFromRoots(directed)
	k.class = k.classify(directed, reached)
	k.chain = chainServices(lowerKeys(serves), reached)
	return k
}

// lowerKeys is m with its keys lowercased (services are matched case-insensitively).
func lowerKeys(m map[string][]int) map[string][]int {
	out := make(map[string][]int, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = append(out[strings.ToLower(k)], v...)
	}
	return out
}

// setOfID is the scoring set of a group id, -1 when no group has it.
func (k *Key) setOfID(id string) int {
	if i := k.gt.GroupIndex(id); i >= 0 {
		return k.gt.SetOf(i)
	}
	return -1
}

// servicesOfSets maps each service of the topology to the scoring sets whose Service or
// workload groups name it.
func (k *Key) servicesOfSets(topo *Topology) map[string][]int {
	out := map[string][]int{}
	for i, g := range k.gt.Groups {
		if k.broad[i] || (g.Kind != "Service" && !grader.IsWorkloadKind(g.Kind)) {
			continue
		}
		for _, svc := range topo.Services {
			if k.gt.MatchesGroup(variant(g, svc), i) && !slices.Contains(out[svc], k.gt.SetOf(i)) {
				out[svc] = append(out[svc], k.gt.SetOf(i))
			}
		}
	}
	return out
}

// variant is the entity naming name as an object of group g's kind and namespace; for a
// workload group, as a Pod, which the grader reduces to its workload's name (rule 3), so that a
// pod's name names its Deployment.
func variant(g grader.Group, name string) grader.Entity {
	kind := g.Kind
	if grader.IsWorkloadKind(kind) {
		kind = "Pod"
	}
	if g.Namespace == "" || grader.IsClusterScoped(kind) {
		return grader.ParseEntity(kind + "/" + name)
	}
	return grader.ParseEntity(g.Namespace + "/" + kind + "/" + name)
}

// distances is a breadth-first search from one set.
func distances(adj [][]int, from int) []int {
	dist := make([]int, len(adj))
	for i := range dist {
		dist[i] = -1
	}
	dist[from] = 0
	queue := []int{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, t := range adj[s] {
			if dist[t] < 0 {
				dist[t] = dist[s] + 1
				queue = append(queue, t)
			}
		}
	}
	return dist
}

// reachedFromRoots marks the sets the propagation steps lead to from a root cause, the root
// causes included.
func (k *Key) reachedFromRoots(directed [][]int) []bool {
	reached := make([]bool, k.gt.Sets())
	queue := slices.Clone(k.roots)
	for _, r := range k.roots {
		reached[r] = true
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, t := range directed[s] {
			if !reached[t] {
				reached[t] = true
				queue = append(queue, t)
			}
		}
	}
	return reached
}

// classify gives each set that is no root cause its class: mechanism when the propagation
// steps lead to it from a root cause and on from it to another set, and no alert names it;
// symptom otherwise (an alerting victim, the end of the chain, or a group the ground truth
// lists as affected without saying how).
func (k *Key) classify(directed [][]int, reached []bool) []string {
	n := k.gt.Sets()
	alerting := make([]bool, n)
	for _, id := range k.gt.Alerting {
		if s := k.setOfID(id); s >= 0 {
			alerting[s] = true
		}
	}
	class := make([]string, n)
	for s := range n {
		switch {
		case k.gt.IsRootSet(s):
		case reached[s] && len(directed[s]) > 0 && !alerting[s]:
			class[s] = ClassMechanism
		default:
			class[s] = ClassSymptom
		}
	}
	return class
}

// Assessment is what the answers of one episode earn beyond the gated score.
type Assessment struct {
	PartialCredit  float64
	FalsePositives []FalsePositive
}

// FalsePositive is a submitted entity that hits no root cause, and why it is wrong.
type FalsePositive struct {
	Entity string `json:"entity"`
	Class  string `json:"class"`
}

// Assess scores the predictions of a graded episode (the entities and the groups they were
// mapped to): partial credit is recall times precision over per-entity credits, where an
// entity's credit towards a root cause is 1 when it hits it, 2^-d when its set is d edges
// from it on the fault graph (d <= 3), 0.5 for a near miss, else 0. Recall is the mean over
// root causes of the best credit any entity earns towards it, precision the mean over
// entities of the best credit it earns towards any root cause. It is 1 for the exact answer,
// never below the gated score, and 0 for an empty answer.
func (k *Key) Assess(predictions []grader.Prediction) Assessment {
	a := Assessment{FalsePositives: []FalsePositive{}}
	if len(predictions) == 0 || len(k.roots) == 0 {
		return a
	}
	best := make([]float64, len(k.roots))
	var precision float64
	for _, p := range predictions {
		credits, class := k.credits(p)
		top := 0.0
		for r, c := range credits {
			best[r] = max(best[r], c)
			top = max(top, c)
		}
		precision += top
		if !p.RootCause {
			a.FalsePositives = append(a.FalsePositives, FalsePositive{Entity: p.Entity, Class: class})
		}
	}
	var recall float64
	for _, b := range best {
		recall += b
	}
	recall /= float64(len(k.roots))
	precision /= float64(len(predictions))
	a.PartialCredit = recall * precision
	return a
}

// credits is what one prediction earns towards each root cause, and its class when it is a
// false positive.
func (k *Key) credits(p grader.Prediction) ([]float64, string) {
	credits := make([]float64, len(k.roots))
	set := -1
	if p.Group != nil {
		set = k.setOfID(*p.Group)
	}
	if set >= 0 {
		for r := range k.roots {
			if d := k.dist[r][set]; d >= 0 && d <= maxCreditDistance {
				credits[r] = math.Pow(2, -float64(d))
			}
		}
		return credits, k.class[set]
	}
	e := grader.ParseEntity(p.Entity)
	near := false
	for r, root := range k.roots {
		if k.nearMiss(e, root) {
			credits[r], near = nearMissCredit, true
		}
	}
	if near {
		return credits, ClassNearMiss
	}
	return credits, ClassUnrelated
}

// nearMiss reports whether an entity that matched no group names an object of root-cause set
// s under a wrong kind or namespace (its name satisfies the group's name rule), or a sibling
// of one: same kind and namespace, and the same first name word (`ad-allow-all` beside the
// root cause `ad-deny-ingress`).
func (k *Key) nearMiss(e grader.Entity, s int) bool {
	if !e.Parsed {
		return false
	}
	for i, g := range k.gt.Groups {
		if k.gt.SetOf(i) != s || k.broad[i] {
			continue
		}
		if k.gt.MatchesGroup(variant(g, e.Name), i) ||
			(e.Workload != e.Name && k.gt.MatchesGroup(variant(g, e.Workload), i)) {
			return true
		}
		sameNamespace := g.Namespace == "" || grader.IsClusterScoped(g.Kind) ||
			strings.EqualFold(g.Namespace, e.Namespace)
		if e.Kind == g.Kind && sameNamespace && firstWord(e.Workload) != "" &&
			firstWord(e.Workload) == firstWord(stem(g)) {
			return true
		}
	}
	return false
}

// stem is the literal start of a group's name: its exact name, or its first filter up to
// the first regular-expression character (a leading `.*` skipped).
func stem(g grader.Group) string {
	if g.Name != "" {
		return g.Name
	}
	if len(g.Filters) == 0 {
		return ""
	}
	p := strings.TrimPrefix(g.Filters[0].Pattern, ".*")
	if end := strings.IndexAny(p, `.*+?()[]{}|\^$`); end >= 0 {
		p = p[:end]
	}
	return p
}

// firstWord is a name's first `-`-separated word, lower case.
func firstWord(name string) string {
	w, _, _ := strings.Cut(strings.ToLower(name), "-")
	return w
}

// nameToken is what a Kubernetes object name looks like inside free text.
var nameToken = regexp.MustCompile(`[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`)

// Mentions reports whether text names an object of a root cause: a word of it satisfies the
// name rule of a root-cause group (kind and namespace aside, since a command greps for a
// name). Groups that accept any name say nothing, and a Namespace group counts only when its
// set has no other group to be named by (`otel-demo` is in every command).
func (k *Key) Mentions(text string) bool {
	words := map[string]bool{}
	for _, w := range nameToken.FindAllString(text, -1) {
		words[w] = true
	}
	for i, g := range k.gt.Groups {
		if !k.gt.IsRootSet(k.gt.SetOf(i)) || k.broad[i] || (g.Kind == "Namespace" && k.setHasOther(i)) {
			continue
		}
		for w := range words {
			if k.gt.MatchesGroup(variant(g, w), i) {
				return true
			}
		}
	}
	return false
}

// setHasOther reports whether group i's scoring set holds another group that can be named.
func (k *Key) setHasOther(i int) bool {
	for j, g := range k.gt.Groups {
		if j != i && k.gt.SetOf(j) == k.gt.SetOf(i) && !k.broad[j] && g.Kind != "Namespace" {
			return true
		}
	}
	return false
}
