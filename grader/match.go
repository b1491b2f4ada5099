package grader

import (
	"strings"
)

// The deterministic matcher maps a submitted entity to at most one ground-truth group. It
// approximates the official LLM judge with these rules, each tested on its own:
//
//  1. Entities are `namespace/Kind/name`; `Kind/name` names a cluster-scoped object or one
//     whose namespace was left out, and matches only groups without a namespace and groups of
//     cluster-scoped kinds (Namespace, Node, ...). See ParseEntity.
//  2. Kinds compare case-insensitively after mapping kubectl short names and plurals. See
//     canonicalKind.
//  3. Deployment, Pod, ReplicaSet, StatefulSet and DaemonSet match each other; the full name or
//     the workload name (generated suffixes dropped) may match the group. See workloadName.
//  4. A chaos-mesh Schedule matches a group of any chaos kind, and a chaos object a Schedule
//     group, when the names correspond. A chaos object's `-<timestamp>` suffix (what a
//     Schedule spawned) is dropped whichever group it is matched with. See chaosScheduleName.
//  5. The namespace must equal the group's (case-insensitively) when the group has one. For
//     cluster-scoped groups (Namespace, Node, ...) the entity's namespace part is ignored, so
//     `otel-demo/Namespace/otel-demo`, `cluster/Namespace/otel-demo` and `Namespace/otel-demo`
//     all name the namespace otel-demo.
//  6. Names match a group's exact name, or one of its filters as a whole-name regular
//     expression (one starting with `.*` as "contains"), a glob fallback, or a bare prefix.
//     See compileFilter, filterRegexp and Filter.Matches.
//     Names compare case-insensitively (Kubernetes names are lower case).
//  7. When several groups match: root-cause groups first, then the group whose id holds the
//     most leading words of the entity's (workload) name as whole `-`-separated words (all of
//     them beats some), then file order.

// MatchGroup returns the index of the group the entity maps to, or -1 when none matches.
func (gt *GroundTruth) MatchGroup(e Entity) int {
	if !e.Parsed {
		return -1
	}
	best, bestRoot, bestWords := -1, false, -1
	for i := range gt.Groups {
		g := &gt.Groups[i]
		if !entityMatchesGroup(e, g) {
			continue
		}
		root := gt.rootSets[gt.setOf[i]]
		words := idWordAffinity(g.ID, affinityName(e))
		better := best == -1 ||
			(root && !bestRoot) ||
			(root == bestRoot && words > bestWords)
		if better {
			best, bestRoot, bestWords = i, root, words
		}
	}
	return best
}

// MatchesGroup reports whether the entity satisfies group i's kind, namespace and name rules
// (1 to 6), whatever other groups it might also match. Task validation uses it to check that
// a snapshot holds an object for every root cause.
func (gt *GroundTruth) MatchesGroup(e Entity, i int) bool {
	return e.Parsed && i >= 0 && i < len(gt.Groups) && entityMatchesGroup(e, &gt.Groups[i])
}

// GroupMatches reports whether e belongs to g by rules 1 to 6, for a group outside its ground
// truth (one filter of a group alone, for the checks of a task's author).
func GroupMatches(e Entity, g Group) bool { return e.Parsed && entityMatchesGroup(e, &g) }

// entityMatchesGroup applies rules 1 to 6 to one group.
func entityMatchesGroup(e Entity, g *Group) bool {
	workload := workloadKinds[e.Kind] && workloadKinds[g.Kind]
	scheduleForChaos := e.Kind == "Schedule" && isChaosKind[g.Kind]
	chaosForSchedule := isChaosKind[e.Kind] && g.Kind == "Schedule"
	if !kindsEqual(e.Kind, g.Kind) && !workload && !scheduleForChaos && !chaosForSchedule {
		return false
	}
	if !namespaceMatches(e, g) {
		return false
	}
	if g.matchesName(e.Name) {
		return true
	}
	// Past the kind check, only workload and chaos entities have a reduced name (rules 3, 4).
	return e.Workload != e.Name && g.matchesName(e.Workload)
}

// namespaceMatches applies rules 1 and 5.
func namespaceMatches(e Entity, g *Group) bool {
	switch {
	case clusterScopedKinds[g.Kind]:
		return true
	case g.Namespace == "":
		return true
	case e.Namespace == "":
		return false // Kind/name cannot match a namespaced group
	}
	return strings.EqualFold(e.Namespace, g.Namespace)
}

// affinityName is the name rule 7 compares with group ids: the workload name for workloads.
func affinityName(e Entity) string {
	if workloadKinds[e.Kind] {
		return e.Workload
	}
	return e.Name
}

// idWordAffinity counts how many leading `-`-separated words of name appear, in order and
// next to each other, among the words of a group id: `frontend-proxy` scores 2 against
// `frontend-proxy-pod-1` and 1 against `frontend-pod-1`.
func idWordAffinity(id, name string) int {
	idWords := strings.FieldsFunc(strings.ToLower(id), isWordSeparator)
	nameWords := strings.FieldsFunc(strings.ToLower(name), isWordSeparator)
	best := 0
	for start := range idWords {
		n := 0
		for n < len(nameWords) && start+n < len(idWords) && idWords[start+n] == nameWords[n] {
			n++
		}
		best = max(best, n)
	}
	return best
}

func isWordSeparator(r rune) bool { return r == '-' || r == '_' || r == '.' }
