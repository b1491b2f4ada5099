package validate

import (
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/snapshot"
)

// DuplicateThreshold is the similarity from which two tasks are near-duplicates. A task
// copied, renamed and moved in time scores 1; on generated tasks, the same fault on the same
// service recorded again with other noise scores 0.50, another fault on the same service at
// most 0.49, the same fault on another service less, and the demo's tasks between them at
// most 0.40 (docs/benchmarks.md). So a pair above it is one recording edited, not two.
const DuplicateThreshold = 0.8

// maxFeatureText bounds the text of a message, a log line or a span status kept in a
// feature: their openings tell errors apart, and the bound keeps normalising cheap.
const maxFeatureText = 120

// sharedListed is how many shared features a pair lists, each at most maxSharedText bytes.
const (
	sharedListed  = 5
	maxSharedText = 100
)

// Fingerprint is what the model sees of a task, as features with weights: firing alerts,
// Kubernetes events, objects that change between the first and the last dump, error spans
// and error log lines, each normalised for names, times and ids (see normalise), so that a
// copy renamed and moved in time has the same fingerprint. A feature's weight grows with the
// log of its count.
type Fingerprint struct {
	Task     string
	Features map[string]float64
}

// FingerprintTask reads the task folder dir in one streaming pass over each file.
func FingerprintTask(task, dir string) (*Fingerprint, error) {
	counts := map[string]int{}
	files, err := snapshot.Inventory(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		switch {
		case f.Alert:
			err = alertFeatures(path, counts)
		case f.Table == snapshot.Events:
			err = eventFeatures(path, counts)
		case f.Table == snapshot.Objects:
			err = changeFeatures(path, counts)
		case f.Table == snapshot.Traces:
			err = spanFeatures(path, counts)
		case f.Table == snapshot.Logs:
			err = logFeatures(path, counts)
		}
		if err != nil {
			return nil, fmt.Errorf("fingerprint of %s: %w", task, err)
		}
	}
	fp := &Fingerprint{Task: task, Features: make(map[string]float64, len(counts))}
	for k, n := range counts {
		fp.Features[k] = 1 + math.Log(float64(n))
	}
	return fp, nil
}

func alertFeatures(path string, counts map[string]int) error {
	af, err := snapshot.ReadAlertsFile(path)
	if err != nil {
		return err
	}
	for _, a := range af.Alerts {
		l := a.Labels
		counts[strings.Join([]string{"alert", a.Name, l["severity"], l["namespace"], l["service_name"], normalise(l["pod"]),
			l["deployment"]}, " ")]++
	}
	return nil
}

func eventFeatures(path string, counts map[string]int) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		e, err := r.Event()
		if err == nil {
			counts[strings.Join([]string{"event", e.Type, e.Reason, e.Regarding.Kind, normalise(e.Regarding.Name),
				normalise(e.Message)}, " ")]++
		}
		return nil
	})
	return err
}

// changeFeatures names the objects added, removed or changed between the first and the last
// dump (rows within a minute of a dump's first), keeping only a hash of each body.
func changeFeatures(path string, counts map[string]int) error {
	var first, current map[snapshot.ObjectRef]uint64
	var start time.Time
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		t, ok := r.Time("Timestamp")
		if !ok {
			return nil
		}
		if current == nil || t.Sub(start) > time.Minute {
			if first == nil {
				first = current
			}
			current, start = map[snapshot.ObjectRef]uint64{}, t
		}
		o, err := r.Object()
		if err != nil {
			return nil
		}
		h := fnv.New64a()
		h.Write([]byte(normalise(o.Body.Get("spec").Raw)))
		current[o.Ref] = h.Sum64()
		return nil
	})
	if err != nil || first == nil {
		return err
	}
	for ref, h := range current {
		if was, ok := first[ref]; !ok || was != h {
			counts["change "+ref.Kind+" "+ref.Namespace+"/"+normalise(ref.Name)]++
		}
	}
	for ref := range first {
		if _, ok := current[ref]; !ok {
			counts["gone "+ref.Kind+" "+ref.Namespace+"/"+normalise(ref.Name)]++
		}
	}
	return nil
}

func spanFeatures(path string, counts map[string]int) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		if strings.EqualFold(r.Get("StatusCode"), "Error") {
			counts[strings.Join([]string{"span", r.Get("ServiceName"), normalise(r.Get("SpanName")),
				normalise(r.Get("StatusMessage"))}, " ")]++
		}
		return nil
	})
	return err
}

func logFeatures(path string, counts map[string]int) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		switch sev := strings.ToUpper(r.Get("SeverityText")); sev {
		case "ERROR", "FATAL", "CRITICAL", "WARN", "WARNING":
			counts[strings.Join([]string{"log", r.Get("ServiceName"), sev, normalise(r.Get("Body"))}, " ")]++
		}
		return nil
	})
	return err
}

// normalisers replace what differs between two recordings of the same incident: times,
// ids, addresses, generated name suffixes (Kubernetes' hashes use no vowels), numbers.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[t _]\d\d[:-]\d\d[:-]\d\d(?:[.,]\d+)?z?`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`), "<ip>"},
	{regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2-9]{5,10}\b`), "-<hash>"},
	{regexp.MustCompile(`\b[0-9a-f]{8,}\b`), "<hex>"},
	{regexp.MustCompile(`\d+(?:\.\d+)?`), "#"},
}

// normalise lowercases s, cuts it to maxFeatureText bytes and replaces what normalisers match.
func normalise(s string) string {
	if len(s) > maxFeatureText {
		s = s[:maxFeatureText]
	}
	s = strings.ToLower(s)
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// Pair is two tasks and how alike their fingerprints are.
type Pair struct {
	Task, Of   string // Of is another given task, or one of the dataset compared against
	Similarity float64
	Shared     []string // the heaviest features they share
}

// Similarities compares every pair of given tasks, and each given task with each of against,
// and returns the pairs, most alike first. The similarity is
// the mean, over the kinds of evidence either task has (alerts, events, object changes, error
// spans, error log lines), of the cosine similarity of their features weighted by rarity (a
// feature every task has, such as the cluster's own noise, weighs nothing): the service that
// fails most fills the spans and logs, and each kind counting alike keeps it from deciding.
func Similarities(given, against []*Fingerprint) []Pair {
	all := append(append([]*Fingerprint{}, given...), against...)
	df := map[string]int{}
	for _, fp := range all {
		for k := range fp.Features {
			df[k]++
		}
	}
	idf := func(k string) float64 { return math.Log(float64(len(all)+1) / float64(df[k])) }
	norms := make(map[*Fingerprint]map[string]float64, len(all))
	for _, fp := range all {
		sums := map[string]float64{}
		for k, w := range fp.Features {
			sums[evidenceKind(k)] += (w * idf(k)) * (w * idf(k))
		}
		for kind, sum := range sums {
			sums[kind] = math.Sqrt(sum)
		}
		norms[fp] = sums
	}
	var out []Pair
	for i, a := range given {
		for _, b := range append(given[i+1:len(given):len(given)], against...) {
			out = append(out, compare(a, b, idf, norms))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Similarity > out[j].Similarity })
	return out
}

// evidenceKind is the kind of evidence of a feature: its first word.
func evidenceKind(feature string) string {
	kind, _, _ := strings.Cut(feature, " ")
	if kind == "gone" {
		return "change"
	}
	return kind
}

// compare is the similarity of a and b, with what they share most.
func compare(a, b *Fingerprint, idf func(string) float64, norms map[*Fingerprint]map[string]float64) Pair {
	type shared struct {
		feature string
		weight  float64
	}
	dots := map[string]float64{}
	var common []shared
	for k, wa := range a.Features {
		if wb, ok := b.Features[k]; ok {
			w := wa * wb * idf(k) * idf(k)
			dots[evidenceKind(k)] += w
			common = append(common, shared{k, w})
		}
	}
	kinds := 0
	var sim float64
	for kind := range union(norms[a], norms[b]) {
		na, nb := norms[a][kind], norms[b][kind]
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
	sort.Slice(common, func(i, j int) bool {
		if common[i].weight != common[j].weight {
			return common[i].weight > common[j].weight
		}
		return common[i].feature < common[j].feature
	})
	p := Pair{Task: a.Task, Of: b.Task, Similarity: sim}
	for _, c := range common[:min(sharedListed, len(common))] {
		p.Shared = append(p.Shared, clip(strings.Join(strings.Fields(c.feature), " "), maxSharedText))
	}
	return p
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
					Message: fmt.Sprintf("a near-duplicate of %s (similarity %.2f, from %.2f); both have: %s", side[1], p.Similarity,
						DuplicateThreshold, strings.Join(p.Shared, "; "))})
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
