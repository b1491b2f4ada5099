package synth

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// chain is the path a fault's effect travels: the first service that suffers, then each
// caller on the way to the edge.
func (w *world) chain(f *fault) []string {
	first := f.victim
	for _, e := range f.effects {
		if e.callers != nil {
			first = e.callers[0] // only this caller notices
		}
	}
	if w.byName[first].calls == nil && !w.byName[first].traced || first == "kafka" || first == "valkey-cart" {
		// an untraced store: its first traced caller is what shows
		if c := w.callers(first); len(c) > 0 {
			return append([]string{first}, w.pathToEdge(c[0])...)
		}
	}
	out := w.pathToEdge(first)
	if first != f.victim {
		out = append([]string{f.victim}, out...)
	}
	return out
}

// pathToEdge is name and the nearest callers up to the edge proxy.
func (w *world) pathToEdge(name string) []string {
	parent := map[string]string{}
	queue := []string{name}
	seen := map[string]bool{name: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == "frontend-proxy" {
			break
		}
		callers := w.callers(cur)
		sort := slices.Clone(callers)
		slices.Sort(sort)
		for _, c := range sort {
			if !seen[c] && c != "load-generator" {
				seen[c], parent[c] = true, cur
				queue = append(queue, c)
			}
		}
	}
	var out []string
	for cur := "frontend-proxy"; cur != ""; cur = parent[cur] {
		out = append([]string{cur}, out...)
		if cur == name {
			break
		}
	}
	if len(out) == 0 || out[0] != name {
		return []string{name}
	}
	return out
}

// yamlWriter writes the ground truth as PyYAML's safe_dump does: keys sorted, two-space
// indent, block lists under their key.
type yamlWriter struct{ b strings.Builder }

func (y *yamlWriter) line(indent int, format string, args ...any) {
	y.b.WriteString(strings.Repeat(" ", indent))
	fmt.Fprintf(&y.b, format, args...)
	y.b.WriteByte('\n')
}

// scalar quotes a string when YAML would read it as something else.
func scalar(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#{}[]&*!|>'\"%@`,\\\n") &&
		!strings.HasPrefix(s, "-") && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") &&
		!slices.Contains([]string{"true", "false", "yes", "no", "null", "on", "off", "~"}, strings.ToLower(s))
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// groundTruth writes the answer key in the real flat schema.
func (w *world) groundTruth() string {
	var groups []gtGroup
	add := func(g gtGroup) {
		if !slices.ContainsFunc(groups, func(h gtGroup) bool { return h.id == g.id }) {
			groups = append(groups, g)
		}
	}
	var aliases [][]string
	type edge struct{ source, target, condition, effect string }
	var edges []edge
	type gtAlert struct{ group, description string }
	var alerts []gtAlert
	fired := w.firedServices()
	for _, f := range w.faults {
		for _, g := range f.groups {
			add(g)
		}
		var set []string
		for _, g := range f.groups {
			if g.kind != "Service" && g.kind != "Pod" && g.kind != "Deployment" || g.root {
				set = append(set, g.id)
			}
		}
		if len(set) > 1 {
			aliases = append(aliases, set)
		}
		root := f.groups[0].id
		chain := w.chain(f)
		prev := root
		for i, svc := range chain {
			id := svc + "-service-1"
			add(gtGroup{id: id, kind: "Service", namespace: appNamespace, filter: []string{svc + `\b`}})
			if i == 0 || w.rng.IntN(2) == 0 {
				add(gtGroup{id: svc + "-pod-1", kind: "Pod", namespace: appNamespace, filter: []string{svc + "-.*"}})
				aliases = append(aliases, []string{id, svc + "-pod-1"})
			}
			cond := f.condition
			if i > 0 {
				cond = fmt.Sprintf("%s receives errors or slow answers from %s", svc, chain[i-1])
			}
			edges = append(edges, edge{prev, id, cond, fmt.Sprintf("%s requests fail or slow down", svc)})
			if fired[svc] {
				alerts = append(alerts, gtAlert{id, fmt.Sprintf("Request error rate of %s is above 0", svc)})
			}
			prev = id
		}
	}
	var y yamlWriter
	y.line(0, "---")
	y.line(0, "alerts:")
	if len(alerts) == 0 {
		y.b.Reset()
		y.line(0, "---")
		y.line(0, "alerts: []")
	}
	for _, a := range alerts {
		y.line(2, "- group_id: %s", a.group)
		y.line(4, "id: RequestErrorRate")
		y.line(4, "metadata:")
		y.line(6, "description: %s", scalar(a.description))
	}
	y.line(0, "aliases:")
	for _, set := range mergeAliases(aliases) {
		for i, id := range set {
			if i == 0 {
				y.line(2, "- - %s", id)
			} else {
				y.line(4, "- %s", id)
			}
		}
	}
	y.line(0, "fault:")
	for _, f := range w.faults {
		y.line(2, "- category: %s", map[bool]string{true: "Configuration Setting", false: "Change"}[f.flag != nil])
		if f.flag != nil {
			y.line(4, "changed:")
			y.line(6, `element: data.demo\.flagd\.json`)
			y.line(6, "from: %s", scalar(fmt.Sprintf(`"%s": {"defaultVariant": "%s"}`, f.flag.name, "off")))
			y.line(6, "to: %s", scalar(fmt.Sprintf(`"%s": {"defaultVariant": "%s"}`, f.flag.name, "on")))
		}
		y.line(4, "condition: %s", scalar(f.condition))
		y.line(4, "entity:")
		y.line(6, "group_id: %s", f.groups[0].id)
		y.line(6, "kind: %s", f.groups[0].kind)
		y.line(6, "name: %s", f.groups[0].id)
		y.line(4, "fault_mechanism: %s", scalar(f.mechanism))
	}
	y.line(0, "groups:")
	for _, g := range groups {
		first := true
		item := func(format string, args ...any) {
			if first {
				y.line(2, "- "+format, args...)
				first = false
			} else {
				y.line(4, format, args...)
			}
		}
		if g.filter != nil {
			item("filter:")
			for _, f := range g.filter {
				y.line(6, "- %s", scalar(f))
			}
		}
		item("id: %s", g.id)
		item("kind: %s", g.kind)
		if g.name != "" {
			item("name: %s", g.name)
		}
		if g.namespace != "" {
			item("namespace: %s", g.namespace)
		}
		if g.root {
			item("root_cause: true")
		}
	}
	y.line(0, "metadata:")
	y.line(2, "version: v1")
	y.line(0, "propagations:")
	for _, e := range edges {
		y.line(2, "- condition: %s", scalar(e.condition))
		y.line(4, "effect: %s", scalar(e.effect))
		y.line(4, "source: %s", e.source)
		y.line(4, "target: %s", e.target)
	}
	y.line(0, "recommended_actions:")
	for _, f := range w.faults {
		for _, a := range f.actions {
			y.line(2, "- solution:")
			y.line(6, "actions:")
			y.line(8, "- %s", scalar(a))
			y.line(6, "id: %s", scalar(a))
		}
	}
	return y.b.String()
}

// firedServices are the services that had a RequestErrorRate alert after a fault began.
func (w *world) firedServices() map[string]bool {
	out := map[string]bool{}
	first := w.faults[0].at
	for t := first.Add(time.Minute); t.Before(w.end); t = t.Add(time.Minute) {
		for _, a := range w.requestErrorAlerts(t) {
			out[a.labels["service_name"]] = true
		}
	}
	return out
}

// mergeAliases joins alias lists that share an id, keeping first-seen order.
func mergeAliases(sets [][]string) [][]string {
	var out [][]string
	for _, set := range sets {
		merged := false
		for i := range out {
			if slices.ContainsFunc(set, func(id string) bool { return slices.Contains(out[i], id) }) {
				for _, id := range set {
					if !slices.Contains(out[i], id) {
						out[i] = append(out[i], id)
					}
				}
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, slices.Clone(set))
		}
	}
	return out
}
