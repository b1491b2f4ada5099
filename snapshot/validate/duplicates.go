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
// 40 generated tasks (docs/benchmarks.md, internal/devtools/dupbench): every copy renamed,
// moved in time, given or stripped of a fifth of its lines, or that lost a call scores
// 0.97-1.00; a fault recorded again on the same service, the same fault on another service,
// and another fault (two faults that fail the same service alike) score at most 0.63. 0.8
// sits between the two, with room on both sides, so a pair above it is one recording edited,
// not two.
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
	kinds  map[*Fingerprint]map[string]*amount // by kind of evidence
}

// amount is how much of a kind of evidence a task has: its features weighted by rarity,
// counted, summed and as a vector's length.
type amount struct {
	items      int
	mass, norm float64
}

// fewItems is how many features of a kind a task may have for the kind to be compared by
// containment rather than cosine: with a dozen or fewer, one rare line a copy lost can carry
// most of the kind's weight (measured in docs/benchmarks.md: a copy stripped of a fifth of its
// lines fell to 0.14 on its twelve error spans), while kinds with more keep the cosine, which
// tells apart two recordings of the same fault better (containment on every kind lifted their
// most alike pair from 0.59 to 0.65).
const fewItems = 12

// metricWeight is how much the metric shapes count against each other kind of evidence: a
// copy keeps them sample for sample, and no two recordings share them (among the 40 tasks
// of docs/benchmarks.md, 1.00 for every copy and at most 0.04 for any other pair), while two
// faults that fail one service alike share their alerts, events, spans and logs.
const metricWeight = 2

// Similarities compares every pair of given tasks, and each given task with each of against,
// and returns the pairs, most alike first; background tasks are compared with none, but count
// in how rare a feature is, so that a pair compared alone still weighs the cluster's own
// noise (the Watchdog alert) as what every task has. Each pair's entities are first matched
// by their roles (matchEntities), and a feature of one task is the other's when it is the
// same with each entity replaced by its match. The similarity is the mean, over the kinds of
// evidence either task has (alerts, events, object changes, error spans, error log lines,
// metric shapes), of how alike their features are, weighted by rarity (a feature every task
// has, whatever its entities, weighs next to nothing): the cosine, or for a kind with few
// features on one side (fewItems) the share of the smaller side's weight the other has, which
// lines left out do not lower. The service that fails most fills the spans and logs, and each
// kind counting alike (metric shapes twice: metricWeight) keeps it from deciding.
func Similarities(given, against, background []*Fingerprint) []Pair {
	c := newCorpus(given, against, background)
	var out []Pair
	for i, a := range given {
		for _, b := range append(given[i+1:len(given):len(given)], against...) {
			out = append(out, c.compare(a, b))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Similarity > out[j].Similarity })
	return out
}

// newCorpus parses the fingerprints compared and counts how rare each feature is among all.
func newCorpus(given, against, background []*Fingerprint) *corpus {
	all := slices.Concat(given, against, background)
	c := &corpus{size: len(all), df: map[string]int{}, parsed: make(map[*Fingerprint][]parsed, len(all)),
		kinds: make(map[*Fingerprint]map[string]*amount, len(all)), roles: map[*Fingerprint][]vector{}}
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
		kinds := map[string]*amount{}
		for _, p := range c.parsed[fp] {
			kind := evidenceKind(p.key)
			a := kinds[kind]
			if a == nil {
				a = &amount{}
				kinds[kind] = a
			}
			w := p.weight * c.idf(p.template)
			a.items++
			a.mass += w
			a.norm += w * w
		}
		for _, a := range kinds {
			a.norm = math.Sqrt(a.norm)
		}
		c.kinds[fp] = kinds
	}
	return c
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
	dots, overlaps := map[string]float64{}, map[string]float64{}
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
			overlaps[evidenceKind(p.key)] += min(p.weight, wb) * idf
			if !c.common(p.template) {
				listed = append(listed, shared{a.shown[p.key], evidenceKind(p.key), w})
			}
		}
	}
	var sim, weights float64
	for kind := range union(c.kinds[a], c.kinds[b]) {
		ka, kb := c.kinds[a][kind], c.kinds[b][kind]
		if ka == nil {
			ka = &amount{}
		}
		if kb == nil {
			kb = &amount{}
		}
		if ka.norm == 0 && kb.norm == 0 {
			continue // noise every task has: says nothing either way
		}
		w := 1.0
		if kind == "metric" {
			w = metricWeight
		}
		weights += w
		switch {
		case ka.norm == 0 || kb.norm == 0:
		case min(ka.items, kb.items) <= fewItems:
			sim += w * overlaps[kind] / min(ka.mass, kb.mass)
		default:
			sim += w * dots[kind] / (ka.norm * kb.norm)
		}
	}
	if weights > 0 {
		sim /= weights
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

func union(a, b map[string]*amount) map[string]bool {
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
