package snapshot

import (
	"encoding/json"
	"time"
)

// ObjectDump is one dump of the objects table: the rows within a minute of its first.
type ObjectDump struct {
	Start  time.Time
	Bodies map[ObjectRef]string // each object's Body, the last one the dump holds
}

// ReadObjectDumps splits the objects table at path into its dumps, in order. Rows without
// a timestamp, or whose Body is not an object with a kind, are left out.
func ReadObjectDumps(path string) ([]*ObjectDump, error) {
	var dumps []*ObjectDump
	_, err := ScanTable(path, func(r Row) error {
		t, ok := r.Time("Timestamp")
		if !ok {
			return nil
		}
		if len(dumps) == 0 || t.Sub(dumps[len(dumps)-1].Start) > time.Minute {
			dumps = append(dumps, &ObjectDump{Start: t, Bodies: map[ObjectRef]string{}})
		}
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(r.Get("Body")), &o) != nil || o.Kind == "" {
			return nil
		}
		dumps[len(dumps)-1].Bodies[ObjectRef{Kind: o.Kind, Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}] = r.Get(
			"Body")
		return nil
	})
	return dumps, err
}

// ChangedObjects lists the objects added, removed or changed between two dumps.
func ChangedObjects(first, last *ObjectDump) []ObjectRef {
	var out []ObjectRef
	for k, v := range first.Bodies {
		if last.Bodies[k] != v {
			out = append(out, k)
		}
	}
	for k := range last.Bodies {
		if _, ok := first.Bodies[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
