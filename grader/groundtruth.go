package grader

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxGroundTruthBytes bounds a ground-truth document; real ones are a few KiB.
const MaxGroundTruthBytes = 4 << 20

// GroundTruth is the answer key of one task: the groups an entity can map to and the scoring
// sets the aliases merge them into.
type GroundTruth struct {
	Groups []Group
	// Propagations are the fault's steps as the file describes them (source group id to target
	// group id) and Alerting the ids of the groups its alerts name: not scored, but what
	// partial credit and the classes of false positives rest on (harness/readers/analysis).
	Propagations []Propagation
	Alerting     []string
	// Warnings are problems that do not stop grading, such as a filter read as a glob.
	Warnings []string

	setOf    []int  // group index -> scoring set index
	rootSets []bool // scoring set index -> holds a root-cause group
	setCount int
}

// Group is one ground-truth group: the objects of one kind (and namespace) whose names match
// Name or one of the filters.
type Group struct {
	ID        string
	Kind      string // canonical kind
	Namespace string // empty when missing or null in the file
	Name      string // exact name, used by groups without a filter
	Filters   []Filter
	RootCause bool
}

// Propagation is one step of the fault: the group Source makes Target fail.
type Propagation struct {
	Source, Target string
}

// Filter is one name filter of a group (rule 6).
type Filter struct {
	Pattern string
	Glob    bool // the pattern is not a valid regular expression and is read as a shell glob
	full    *regexp.Regexp
	prefix  *regexp.Regexp // the bare-prefix form of `x-.*`, `x-.+` and `x\b` filters
}

// ErrGroundTruth marks a ground truth that cannot be graded; the message names the problem.
var ErrGroundTruth = errors.New("invalid ground truth")

func gtError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrGroundTruth, fmt.Sprintf(format, args...))
}

// ParseGroundTruth reads a ground-truth document in either envelope: flat (groups at the top
// level) or wrapped (`apiVersion`, `kind: GroundTruth`, `metadata`, `spec: {...}`). Keys may be
// snake_case or camelCase; unknown keys are ignored. JSON is accepted too (it is YAML).
func ParseGroundTruth(doc []byte) (*GroundTruth, error) {
	if len(doc) > MaxGroundTruthBytes {
		return nil, gtError("%d bytes, more than the %d allowed", len(doc), MaxGroundTruthBytes)
	}
	var top any
	if err := yaml.Unmarshal(doc, &top); err != nil {
		return nil, gtError("not YAML: %v", err)
	}
	payload, ok := normaliseKeys(top).(map[string]any)
	if !ok {
		return nil, gtError("the document is not a map")
	}
	if spec, ok := payload["spec"].(map[string]any); ok {
		payload = spec
	}
	gt := &GroundTruth{}
	rawGroups, ok := payload["groups"].([]any)
	if !ok || len(rawGroups) == 0 {
		return nil, gtError("no groups")
	}
	for i, raw := range rawGroups {
		g, err := gt.parseGroup(raw)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", i+1, err)
		}
		gt.Groups = append(gt.Groups, g)
	}
	aliases, err := parseAliases(payload["aliases"])
	if err != nil {
		return nil, err
	}
	if err := gt.buildScoringSets(aliases); err != nil {
		return nil, err
	}
	gt.Propagations, gt.Alerting = parseDescriptive(payload)
	if gt.RootCauseSets() == 0 {
		return nil, gtError("no group has root_cause: true")
	}
	return gt, nil
}

// normaliseKeys lower-cases map keys and drops `_` and `-`, so that root_cause, rootCause and
// RootCause are one key.
func normaliseKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			key := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
			out[key] = normaliseKeys(val)
		}
		return out
	case []any:
		for i := range t {
			t[i] = normaliseKeys(t[i])
		}
		return t
	}
	return v
}

// scalar renders a YAML scalar as text; null and missing become "".
func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(t)
	case map[string]any, []any:
		return ""
	}
	return fmt.Sprint(v)
}

func (gt *GroundTruth) parseGroup(raw any) (Group, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Group{}, gtError("not a map")
	}
	g := Group{
		ID:        scalar(m["id"]),
		Kind:      canonicalKind(scalar(m["kind"])),
		Namespace: scalar(m["namespace"]),
		Name:      scalar(m["name"]),
		RootCause: truthy(m["rootcause"]),
	}
	if g.ID == "" {
		return g, gtError("no id")
	}
	if g.Kind == "" {
		return g, gtError("%s has no kind", g.ID)
	}
	var patterns []string
	switch f := m["filter"].(type) {
	case []any:
		for _, p := range f {
			if s := scalar(p); s != "" {
				patterns = append(patterns, s)
			}
		}
	default:
		if s := scalar(f); s != "" {
			patterns = append(patterns, s)
		}
	}
	for _, p := range patterns {
		f := compileFilter(p)
		if f.Glob {
			gt.Warnings = append(gt.Warnings,
				fmt.Sprintf("group %s: filter %q is not a valid regular expression, read as a shell glob", g.ID, p))
		}
		g.Filters = append(g.Filters, f)
	}
	if len(g.Filters) == 0 && g.Name == "" {
		return g, gtError("%s has neither filter nor name", g.ID)
	}
	return g, nil
}

// parseDescriptive reads the propagations and the alerts' group ids, which grading ignores:
// an item that is not a map or lacks an id is skipped. Ids are kept as written, even one no
// group has: these parts were never checked by the official grading, so their readers must
// expect dangling ids.
func parseDescriptive(payload map[string]any) ([]Propagation, []string) {
	var props []Propagation
	list, _ := payload["propagations"].([]any)
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			p := Propagation{Source: scalar(m["source"]), Target: scalar(m["target"])}
			if p.Source != "" && p.Target != "" {
				props = append(props, p)
			}
		}
	}
	var alerting []string
	list, _ = payload["alerts"].([]any)
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if id := scalar(m["groupid"]); id != "" && !slices.Contains(alerting, id) {
				alerting = append(alerting, id)
			}
		}
	}
	return props, alerting
}

func truthy(v any) bool {
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return strings.EqualFold(strings.TrimSpace(t), "true")
	}
	return false
}

func parseAliases(v any) ([][]string, error) {
	list, ok := v.([]any)
	if v != nil && !ok {
		return nil, gtError("aliases is not a list")
	}
	var out [][]string
	var flat []string
	for _, item := range list {
		switch t := item.(type) {
		case []any:
			var ids []string
			for _, id := range t {
				if s := scalar(id); s != "" {
					ids = append(ids, s)
				}
			}
			out = append(out, ids)
		default:
			// A flat list of ids is read as one alias set.
			if s := scalar(t); s != "" {
				flat = append(flat, s)
			}
		}
	}
	if len(flat) > 0 {
		out = append(out, flat)
	}
	return out, nil
}

// buildScoringSets merges groups into scoring sets: groups sharing an id, and groups named in
// one alias list, transitively. A set is a root-cause set when any of its groups is one.
func (gt *GroundTruth) buildScoringSets(aliases [][]string) error {
	parent := make([]int, len(gt.Groups))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) { parent[find(a)] = find(b) }

	byID := map[string]int{}
	for i, g := range gt.Groups {
		if first, ok := byID[g.ID]; ok {
			union(i, first)
		} else {
			byID[g.ID] = i
		}
	}
	for _, set := range aliases {
		for j, id := range set {
			i, ok := byID[id]
			if !ok {
				return gtError("alias names unknown group id %q", id)
			}
			if j > 0 {
				union(i, byID[set[0]])
			}
		}
	}

	gt.setOf = make([]int, len(gt.Groups))
	index := map[int]int{}
	for i := range gt.Groups {
		root := find(i)
		s, ok := index[root]
		if !ok {
			s = len(index)
			index[root] = s
			gt.rootSets = append(gt.rootSets, false)
		}
		gt.setOf[i] = s
		if gt.Groups[i].RootCause {
			gt.rootSets[s] = true
		}
	}
	gt.setCount = len(index)
	return nil
}

// RootCauseSets is how many scoring sets hold a root cause: a submission must hit all of them.
func (gt *GroundTruth) RootCauseSets() int {
	n := 0
	for _, r := range gt.rootSets {
		if r {
			n++
		}
	}
	return n
}

// AliasSets lists the ids of the groups that aliases merge into one scoring set, for each set
// of more than one id, in file order: what a judge is told about aliases.
func (gt *GroundTruth) AliasSets() [][]string {
	ids := make([][]string, gt.setCount)
	for i, g := range gt.Groups {
		set := gt.setOf[i]
		if !slices.Contains(ids[set], g.ID) {
			ids[set] = append(ids[set], g.ID)
		}
	}
	var out [][]string
	for _, set := range ids {
		if len(set) > 1 {
			out = append(out, set)
		}
	}
	return out
}

// Sets is how many scoring sets the groups form (aliases merged).
func (gt *GroundTruth) Sets() int { return gt.setCount }

// SetOf returns the scoring set of group i.
func (gt *GroundTruth) SetOf(i int) int { return gt.setOf[i] }

// IsRootSet reports whether scoring set s holds a root cause.
func (gt *GroundTruth) IsRootSet(s int) bool { return gt.rootSets[s] }

// GroupIndex returns the index of the first group with this id, or -1.
func (gt *GroundTruth) GroupIndex(id string) int { return gt.groupIndex(id) }

// groupIndex returns the index of the first group with this id, or -1.
func (gt *GroundTruth) groupIndex(id string) int {
	if id == "" {
		return -1
	}
	return slices.IndexFunc(gt.Groups, func(g Group) bool { return g.ID == id })
}

// compileFilter compiles a filter as a case-insensitive regular expression anchored as
// filterRegexp says (rule 6). One that does not compile (Python syntax Go lacks, or a glob
// like `*.*`) is read as a shell glob, where `*` and `*.*` mean any name.
func compileFilter(p string) Filter {
	f := Filter{Pattern: p}
	full, err := regexp.Compile(filterRegexp(p))
	if err != nil {
		f.Glob = true
		return f
	}
	f.full = full
	for _, suffix := range []string{`-.*`, `-.+`, `\b`} {
		if stem, ok := strings.CutSuffix(p, suffix); ok && stem != "" {
			if re, err := regexp.Compile(filterRegexp(stem)); err == nil {
				f.prefix = re
			}
			break
		}
	}
	return f
}

// filterRegexp anchors a filter pattern, case-insensitively. A filter must match the whole
// name (`ad-.*` does not match `load-generator`), except that one starting with `.*` need not
// reach the end of the name, so it reads as "contains": Scenario-25 filters its root-cause
// Schedule `.*recommendation` while ITBench's scenario index names the experiment
// recommendation-cpu-stress, so a whole-name reading lets no correct answer match (Scenario-17's
// `.*product-catalog` has the same shape).
func filterRegexp(p string) string {
	if strings.HasPrefix(p, ".*") {
		return `(?i)^(?:` + p + `)`
	}
	return `(?i)^(?:` + p + `)$`
}

// Matches reports whether a name satisfies the filter: the name matches (see filterRegexp), or
// the filter ends in `-.*`, `-.+` or `\b` and the name is the bare prefix (`checkout-.*`
// matches `checkout`).
func (f Filter) Matches(name string) bool {
	if f.Glob {
		if f.Pattern == "*" || f.Pattern == "*.*" {
			return true
		}
		ok, err := path.Match(strings.ToLower(f.Pattern), strings.ToLower(name))
		return err == nil && ok
	}
	return f.full.MatchString(name) || (f.prefix != nil && f.prefix.MatchString(name))
}

// matchesName reports whether a name belongs to the group: equal to its exact name
// (case-insensitive) or matching one of its filters.
func (g *Group) matchesName(name string) bool {
	if g.Name != "" && strings.EqualFold(g.Name, name) {
		return true
	}
	for _, f := range g.Filters {
		if f.Matches(name) {
			return true
		}
	}
	return false
}
