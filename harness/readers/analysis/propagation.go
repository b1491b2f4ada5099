package analysis

import (
	"slices"
	"strings"
)

// The ITBench papers' propagation metrics, defined in prose only; the definitions chosen here
// are in docs/analysis.md. A service is on the fault's chain when it stands for a root-cause
// set or a set the propagation steps reach from one (its Service or workload group names it
// in the call topology). An episode names a service when a word of a reply or a command is
// the service's name, or a pod name of it (the name, a dash, more).

// chainServices marks the topology's services that stand for a set on the chain, reached
// telling which sets the propagation steps reach from the root causes (roots included).
func chainServices(serves map[string][]int, reached []bool) map[string]bool {
	chain := map[string]bool{}
	for svc, sets := range serves {
		if slices.ContainsFunc(sets, func(s int) bool { return reached[s] }) {
			chain[svc] = true
		}
	}
	return chain
}

// ServicesNamed lists the topology's services that text names, each once.
func (k *Key) ServicesNamed(text string) []string {
	var out []string
	for _, w := range nameToken.FindAllString(strings.ToLower(text), -1) {
		if svc := k.serviceOf(w); svc != "" && !slices.Contains(out, svc) {
			out = append(out, svc)
		}
	}
	return out
}

// serviceOf is the service a word names: the service of that name, or the longest one the
// word starts with followed by a dash (a pod `frontend-proxy-5d8f-x2` names frontend-proxy,
// not frontend); "" for none.
func (k *Key) serviceOf(word string) string {
	best := ""
	for _, svc := range k.services {
		if (word == svc || strings.HasPrefix(word, svc+"-")) && len(svc) > len(best) {
			best = svc
		}
	}
	return best
}

// Propagation says how far an episode's investigation followed the fault's chain.
type Propagation struct {
	// RelativeCovered is the share of the chain's services the episode named; nil when the
	// chain has no service (no call topology, or no group that names one).
	RelativeCovered *float64
	// Detoured counts the services off the chain the episode named.
	Detoured int
}

// Propagation measures the services an episode named against the chain.
func (k *Key) Propagation(named []string) Propagation {
	var p Propagation
	covered := 0
	for _, svc := range named {
		if k.chain[svc] {
			covered++
		} else {
			p.Detoured++
		}
	}
	if len(k.chain) > 0 {
		share := float64(covered) / float64(len(k.chain))
		p.RelativeCovered = &share
	}
	return p
}
