package snapshot

import (
	"sort"
	"sync"
	"time"
)

// CatalogEntry is one Kubernetes object a snapshot shows.
type CatalogEntry struct {
	Entity    string // namespace/Kind/name, or Kind/name for a cluster-scoped object
	Ref       ObjectRef
	FirstSeen time.Time
	LastSeen  time.Time
	Sources   []string // objects, events, alerts: where the snapshot names it
}

// Catalog is the set of objects of a snapshot: every object of the object dumps, and the
// objects named only by events or alerts. It is safe for concurrent use while it is built.
type Catalog struct {
	mu      sync.Mutex
	entries map[string]*CatalogEntry
}

// NewCatalog returns an empty catalogue.
func NewCatalog() *Catalog { return &Catalog{entries: map[string]*CatalogEntry{}} }

// EntityOf writes an object as the benchmark names it: `namespace/Kind/name`, or `Kind/name`
// for cluster-scoped objects (those without a namespace).
func EntityOf(ref ObjectRef) string {
	if ref.Namespace == "" {
		return ref.Kind + "/" + ref.Name
	}
	return ref.Namespace + "/" + ref.Kind + "/" + ref.Name
}

// Add records that source showed the object at time t.
func (c *Catalog) Add(ref ObjectRef, t time.Time, source string) {
	if ref.Kind == "" || ref.Name == "" {
		return
	}
	key := EntityOf(ref)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		e = &CatalogEntry{Entity: key, Ref: ref}
		c.entries[key] = e
	}
	if !t.IsZero() {
		if e.FirstSeen.IsZero() || t.Before(e.FirstSeen) {
			e.FirstSeen = t
		}
		if t.After(e.LastSeen) {
			e.LastSeen = t
		}
	}
	if !contains(e.Sources, source) {
		e.Sources = append(e.Sources, source)
		sort.Strings(e.Sources)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Entries lists the catalogue sorted by entity.
func (c *Catalog) Entries() []*CatalogEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*CatalogEntry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity < out[j].Entity })
	return out
}

// alertLabelKinds maps alert labels that name an object to its kind.
var alertLabelKinds = map[string]string{
	"pod": "Pod", "deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet",
	"replicaset": "ReplicaSet", "service_name": "Service", "horizontalpodautoscaler": "HorizontalPodAutoscaler",
	"persistentvolumeclaim": "PersistentVolumeClaim", "job_name": "Job", "node": "Node",
}

// addAlert records the objects an alert's labels name.
func (c *Catalog) addAlert(a Alert, t time.Time) {
	ns := a.Labels["namespace"]
	if ns != "" {
		c.Add(ObjectRef{Kind: "Namespace", Name: ns}, t, "alerts")
	}
	for label, kind := range alertLabelKinds {
		name := a.Labels[label]
		if name == "" {
			continue
		}
		ref := ObjectRef{Kind: kind, Namespace: ns, Name: name}
		if kind == "Node" {
			ref.Namespace = ""
		} else if ns == "" {
			continue // a namespaced object without its namespace cannot be named
		}
		c.Add(ref, t, "alerts")
	}
}
