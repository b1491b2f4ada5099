package validate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot"
)

// closestListed is how many of the snapshot's entities an unmatched root cause names as the
// nearest: enough to see a misspelt name or a wrong kind at a glance.
const closestListed = 3

// rootCauses checks each root-cause group against the snapshot's entities under the grader's
// rules: a group that matches none is an error naming the closest entities; a filter that
// matches none while the group matches through another is a warning; so is an id whose name
// none of the group's filters accepts (ids are synthetic, but authors write them after the
// object they mean, so a disagreement is usually a filter that misses it).
func (v *validation) rootCauses(gt *grader.GroundTruth, snap *snapshot.Snapshot) {
	entries := snap.Catalog.Entries()
	entities := make([]grader.Entity, len(entries))
	for i, e := range entries {
		entities[i] = grader.ParseEntity(e.Entity)
	}
	for i, g := range gt.Groups {
		if !g.RootCause {
			continue
		}
		var matches []string
		for j, e := range entities {
			if gt.MatchesGroup(e, i) {
				matches = append(matches, entries[j].Entity)
			}
		}
		if len(matches) == 0 {
			v.add(Error, CodeUnsolvable, data.GroundTruthFile, 0,
				"root cause %s (%s %s) matches no object of the snapshot: the task cannot be solved; closest: %s",
				g.ID, g.Kind, describeNames(g), strings.Join(closestEntities(g, entities, closestListed), ", "))
		} else {
			v.solvableBy(g, matches)
			v.deadFilters(g, entities)
		}
		v.idAgrees(g, entities)
	}
}

// solvableBy lists what a root cause matches.
func (v *validation) solvableBy(g grader.Group, matches []string) {
	more := ""
	if len(matches) > maxMatchesListed {
		more = fmt.Sprintf(" and %d more", len(matches)-maxMatchesListed)
		matches = matches[:maxMatchesListed]
	}
	v.add(Info, CodeSolvable, data.GroundTruthFile, 0, "root cause %s matches %s%s", g.ID, strings.Join(matches, ", "),
		more)
}

// deadFilters warns of each filter of a matched group that alone matches nothing.
func (v *validation) deadFilters(g grader.Group, entities []grader.Entity) {
	if len(g.Filters) < 2 && g.Name == "" {
		return // the group's only way to match, which matched
	}
	for _, f := range g.Filters {
		alone := g
		alone.Name, alone.Filters = "", []grader.Filter{f}
		if !matchesAny(alone, entities) {
			v.add(Warning, CodeDeadFilter, data.GroundTruthFile, 0,
				"filter %s of root cause %s matches no object of the snapshot (the group matches through its other "+
					"names); closest: %s", f.Pattern, g.ID, strings.Join(closestEntities(alone, entities, closestListed), ", "))
		}
	}
}

// idAgrees warns when the name a group's id reads as is accepted by none of its filters nor
// its exact name.
func (v *validation) idAgrees(g grader.Group, entities []grader.Entity) {
	name, disagrees := idDisagrees(g)
	if !disagrees {
		return
	}
	byID := g
	byID.Name, byID.Filters = name, nil
	seen := "no object of the snapshot is named so"
	if matchesAny(byID, entities) {
		seen = "an object of the snapshot is named so"
	}
	v.add(Warning, CodeIDMismatch, data.GroundTruthFile, 0,
		"root cause %s reads as %s %s, which its %s does not accept (%s)", g.ID, g.Kind, name,
		strings.TrimPrefix(describeNames(g), "in "+g.Namespace+", "), seen)
}

// idDisagrees gives the name g's id reads as, and whether g's name and filters all refuse it
// (by the grader's rules: `checkout-.*` accepts checkout).
func idDisagrees(g grader.Group) (string, bool) {
	name := idName(g)
	if name == "" || len(g.Filters) == 0 && g.Name == "" || strings.EqualFold(g.Name, name) {
		return name, false
	}
	for _, f := range g.Filters {
		if f.Matches(name) {
			return name, false
		}
	}
	return name, true
}

func matchesAny(g grader.Group, entities []grader.Entity) bool {
	for _, e := range entities {
		if grader.GroupMatches(e, g) {
			return true
		}
	}
	return false
}

var (
	trailingNumber = regexp.MustCompile(`[-_]\d+$`)
	// regexSyntax is what a filter adds to the literal name it is after.
	regexSyntax = regexp.MustCompile(`\.\*|\.\+|\\b|[\^$()|?*+\[\]{}\\.]`)
)

// idName is the object name a group's id reads as: the id without its trailing number and
// its kind (`productcatalog-deployment-1` reads as productcatalog). Empty when nothing is left.
func idName(g grader.Group) string {
	name := trailingNumber.ReplaceAllString(strings.ToLower(g.ID), "")
	for _, kind := range []string{g.Kind, kindWord(g.Kind)} {
		if k := strings.ToLower(kind); k != "" {
			name = strings.TrimSuffix(strings.TrimSuffix(name, "-"+k), "_"+k)
		}
	}
	return strings.Trim(name, "-_")
}

// kindWord is how ids spell a kind when not in full (`hpa`, `svc`, `cm`).
func kindWord(kind string) string {
	return map[string]string{"Service": "svc", "HorizontalPodAutoscaler": "hpa", "ConfigMap": "cm",
		"Deployment": "deploy", "NetworkPolicy": "netpol", "Namespace": "ns"}[kind]
}

// targetNames are the names a group asks for: its exact name, each filter's literal part,
// and its id's name.
func targetNames(g grader.Group) []string {
	var out []string
	if g.Name != "" {
		out = append(out, strings.ToLower(g.Name))
	}
	for _, f := range g.Filters {
		if lit := strings.Trim(regexSyntax.ReplaceAllString(strings.ToLower(f.Pattern), ""), "-_"); lit != "" {
			out = append(out, lit)
		}
	}
	if n := idName(g); n != "" {
		out = append(out, n)
	}
	return out
}

// closestEntities ranks entities by how near they come to g: the same kind (or an equivalent
// workload kind) first, then the same namespace, then the name most like one g asks for.
func closestEntities(g grader.Group, entities []grader.Entity, n int) []string {
	type scored struct {
		raw      string
		kind, ns bool
		name     float64
	}
	targets := targetNames(g)
	var all []scored
	for _, e := range entities {
		if !e.Parsed {
			continue
		}
		s := scored{raw: e.Raw,
			kind: strings.EqualFold(e.Kind, g.Kind) || grader.IsWorkloadKind(e.Kind) && grader.IsWorkloadKind(g.Kind),
			ns:   g.Namespace == "" || strings.EqualFold(e.Namespace, g.Namespace)}
		for _, t := range targets {
			s.name = max(s.name, nameSimilarity(t, e.Name), nameSimilarity(t, e.Workload))
		}
		all = append(all, s)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.kind != b.kind {
			return a.kind
		}
		if a.ns != b.ns {
			return a.ns
		}
		if a.name != b.name {
			return a.name > b.name
		}
		return a.raw < b.raw
	})
	out := []string{}
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.raw)
	}
	if len(out) == 0 {
		return []string{"(the snapshot has no object)"}
	}
	return out
}

// nameSimilarity is 1 for the same name (ignoring case and separators), high when one holds
// the other (`ad` in `adservice`), else one less the edit distance over the longer length.
func nameSimilarity(a, b string) float64 {
	a, b = squash(a), squash(b)
	if a == "" || b == "" {
		return 0
	}
	if a == b {
		return 1
	}
	long, short := max(len(a), len(b)), min(len(a), len(b))
	if strings.Contains(a, b) || strings.Contains(b, a) {
		return 0.5 + 0.5*float64(short)/float64(long)
	}
	return 0.5 * (1 - float64(editDistance(a, b))/float64(long))
}

func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// editDistance is Levenshtein's distance in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
