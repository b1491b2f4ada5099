package validate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// DuplicateThreshold is the similarity from which two tasks are near-duplicates. Measured on
// 40 generated tasks (docs/benchmarks.md, internal/devtools/dupbench): copies renamed, moved
// in time, given a fifth more lines or that lost a call score 0.99-1.00, copies stripped of a
// fifth of their lines 1.00 at the median and 0.78 at the least; a fault recorded again on
// the same service scores at most 0.55, the same fault on another service 0.47, another
// fault 0.74 (two faults that fail the same service alike). 0.8 sits above every unrelated
// pair and below all but one copy, so a pair above it is one recording edited, not two.
const DuplicateThreshold = 0.8

// sharedListed is how many shared features a pair lists, each at most maxSharedText bytes.
const (
	sharedListed  = 5
	maxSharedText = 100
)

// Pair is two tasks and how alike their fingerprints are.
type Pair struct {
	Task, Of   string // Of is another given task, or one of the dataset compared against
	Similarity float64
	Shared     []string // the heaviest features they share that most tasks do not, in Task's names
}

// corpus is the set of fingerprints compared, with how rare each feature is among them.
type corpus struct {
	size   int
	df     map[string]int                      // by template: a feature with its entities left out
	parsed map[*Fingerprint][]parsed           // each fingerprint's features
	roles  map[*Fingerprint][]vector           // each fingerprint's entities, of those compared
	norms  map[*Fingerprint]map[string]float64 // by kind of evidence
}

// Similarities compares every pair of given tasks, and each given task with each of against,
// and returns the pairs, most alike first; background tasks are compared with none, but count
// in how rare a feature is, so that a pair compared alone still weighs the cluster's own
// noise (the Watchdog alert) as what every task has. Each pair's entities are first matched
// by their roles (matchEntities), and a feature of one task is the other's when it is the
// same with each entity replaced by its match. The similarity is the mean, over the kinds of
// evidence either task has (alerts, events, object changes, error spans, error log lines,
// metric shapes), of the cosine similarity of their features weighted by rarity (a feature
// every task has, whatever its entities, weighs next to nothing): the service that fails
// most fills the spans and logs, and each kind counting alike keeps it from deciding.
func Similarities(given, against, background []*Fingerprint) []Pair {
	all := slices.Concat(given, against, background)
	c := &corpus{size: len(all), df: map[string]int{}, parsed: make(map[*Fingerprint][]parsed, len(all)),
		norms: make(map[*Fingerprint]map[string]float64, len(all)), roles: map[*Fingerprint][]vector{}}
	ix := roleIndex{}
	for _, fp := range slices.Concat(given, against) {
		c.roles[fp] = ix.vectors(fp.entities)
	}
	for _, fp := range all {
		seen := map[string]bool{}
		for k, w := range fp.Features {
			p := parse(k, w)
			c.parsed[fp] = append(c.parsed[fp], p)
			if !seen[p.template] {
				seen[p.template] = true
				c.df[p.template]++
			}
		}
	}
	for _, fp := range all {
		sums := map[string]float64{}
		for _, p := range c.parsed[fp] {
			w := p.weight * c.idf(p.template)
			sums[evidenceKind(p.key)] += w * w
		}
		for kind, sum := range sums {
			sums[kind] = math.Sqrt(sum)
		}
		c.norms[fp] = sums
	}
	var out []Pair
	for i, a := range given {
		for _, b := range append(given[i+1:len(given):len(given)], against...) {
			out = append(out, c.compare(a, b))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Similarity > out[j].Similarity })
	return out
}

func (c *corpus) idf(template string) float64 {
	return math.Log(float64(c.size+1) / float64(c.df[template]))
}

// common says whether most tasks compared have the feature's template: such a feature is not
// what tells a pair apart, so a pair does not list it.
func (c *corpus) common(template string) bool { return 2*c.df[template] > c.size }

// evidenceKind is the kind of evidence of a feature: its first word.
func evidenceKind(feature string) string {
	kind, _, _ := strings.Cut(feature, " ")
	if kind == "gone" {
		return "change"
	}
	return kind
}

// compare is the similarity of a and b, with what they share most.
func (c *corpus) compare(a, b *Fingerprint) Pair {
	to := matchEntities(c.roles[a], c.roles[b])
	dots := map[string]float64{}
	var listed []shared
	var buf strings.Builder
	for _, p := range c.parsed[a] {
		k, ok := p.as(to, &buf)
		if !ok {
			continue
		}
		if wb, ok := b.Features[k]; ok {
			idf := c.idf(p.template)
			w := p.weight * wb * idf * idf
			dots[evidenceKind(p.key)] += w
			if !c.common(p.template) {
				listed = append(listed, shared{a.shown[p.key], evidenceKind(p.key), w})
			}
		}
	}
	kinds := 0
	var sim float64
	for kind := range union(c.norms[a], c.norms[b]) {
		na, nb := c.norms[a][kind], c.norms[b][kind]
		if na == 0 && nb == 0 {
			continue // noise every task has: says nothing either way
		}
		kinds++
		if na > 0 && nb > 0 {
			sim += dots[kind] / (na * nb)
		}
	}
	if kinds > 0 {
		sim /= float64(kinds)
	}
	sort.Slice(listed, func(i, j int) bool {
		if listed[i].weight != listed[j].weight {
			return listed[i].weight > listed[j].weight
		}
		return listed[i].feature < listed[j].feature
	})
	p := Pair{Task: a.Task, Of: b.Task, Similarity: sim}
	for _, s := range eachKindFirst(listed)[:min(sharedListed, len(listed))] {
		p.Shared = append(p.Shared, clip(strings.Join(strings.Fields(s.feature), " "), maxSharedText))
	}
	return p
}

// shared is a feature two tasks share, in the first one's names, with its weight in their
// similarity.
type shared struct {
	feature, kind string
	weight        float64
}

// eachKindFirst puts the heaviest shared feature of each kind of evidence first, heaviest
// first but a metric's shape last of them, then the others as they come: the noise of
// metrics that a copy keeps sample for sample is rarer than any alert, and would otherwise
// hide the incident the pair shares, which says more to the reader.
func eachKindFirst(listed []shared) []shared {
	seen := map[string]bool{}
	var first, shapes, rest []shared
	for _, s := range listed {
		switch {
		case seen[s.kind]:
			rest = append(rest, s)
		case s.kind == "metric":
			shapes = append(shapes, s)
		default:
			first = append(first, s)
		}
		seen[s.kind] = true
	}
	return slices.Concat(first, shapes, rest)
}

func union(a, b map[string]float64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// CodeDuplicate and CodeNearest are the findings of a comparison of tasks.
const (
	CodeDuplicate = "duplicate" // a near-duplicate of another task
	CodeNearest   = "nearest"   // the task most like it, however alike
)

// AddSimilarities adds to each report whose task is among pairs' a warning for every
// near-duplicate, naming what the two share, and an info naming the most alike other task.
func AddSimilarities(reports []Report, pairs []Pair) {
	index := map[string]int{}
	for i, r := range reports {
		index[r.Task] = i
	}
	nearest := map[string]bool{}
	for _, p := range pairs { // most alike first
		for _, side := range [][2]string{{p.Task, p.Of}, {p.Of, p.Task}} {
			i, ok := index[side[0]]
			if !ok {
				continue
			}
			r := &reports[i]
			if p.Similarity >= DuplicateThreshold {
				r.Findings = append(r.Findings, Finding{Level: Warning, Code: CodeDuplicate,
					Message: fmt.Sprintf("a near-duplicate of %s (similarity %.2f, from %.2f); both have: %s", side[1],
						p.Similarity, DuplicateThreshold, strings.Join(p.Shared, "; "))})
			}
			if !nearest[side[0]] {
				nearest[side[0]] = true
				r.Findings = append(r.Findings, Finding{Level: Info, Code: CodeNearest,
					Message: fmt.Sprintf("the task most like it is %s (similarity %.2f; near-duplicates from %.2f)", side[1],
						p.Similarity, DuplicateThreshold)})
			}
		}
	}
}

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
