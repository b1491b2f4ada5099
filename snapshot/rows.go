package snapshot

import (
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Kind      string
	Namespace string
	Name      string
}

// KubeEvent is the Kubernetes Event in the Body of an events row, in either API shape
// (events.k8s.io/v1 `regarding`/`note`, or core v1 `involvedObject`/`message`).
type KubeEvent struct {
	Time      time.Time
	Watch     string // ADDED, MODIFIED or DELETED
	Type      string // Normal or Warning
	Reason    string
	Message   string
	Regarding ObjectRef
	Count     int64
}

// Event reads the Kubernetes Event of an events row.
func (r Row) Event() (KubeEvent, error) {
	body := r.Get("Body")
	if !jsonguard.Shallow(body, 512) || !gjson.Valid(body) {
		return KubeEvent{}, fmt.Errorf("line %d: Body is not JSON", r.Line)
	}
	doc := gjson.Parse(body)
	obj := doc.Get("object")
	if !obj.Exists() {
		obj = doc
	}
	t, _ := r.Time("Timestamp")
	e := KubeEvent{Time: t, Watch: doc.Get("type").String(), Type: obj.Get("type").String(),
		Reason: obj.Get("reason").String(), Message: firstString(obj, "note", "message"), Count: obj.Get("count").Int()}
	ref := obj.Get("regarding")
	if !ref.Exists() {
		ref = obj.Get("involvedObject")
	}
	e.Regarding = ObjectRef{Kind: ref.Get("kind").String(), Namespace: ref.Get("namespace").String(),
		Name: ref.Get("name").String()}
	if e.Count == 0 {
		e.Count = obj.Get("deprecatedCount").Int()
	}
	return e, nil
}

// KubeObject is the Kubernetes object in the Body of an objects row.
type KubeObject struct {
	Time time.Time
	Ref  ObjectRef
	Body gjson.Result
}

// Object reads the Kubernetes object of an objects row.
func (r Row) Object() (KubeObject, error) {
	body := r.Get("Body")
	if !jsonguard.Shallow(body, 512) || !gjson.Valid(body) {
		return KubeObject{}, fmt.Errorf("line %d: Body is not JSON", r.Line)
	}
	doc := gjson.Parse(body)
	if doc.Get("object.kind").Exists() {
		doc = doc.Get("object") // a watch-event envelope
	}
	t, _ := r.Time("Timestamp")
	o := KubeObject{Time: t, Body: doc, Ref: ObjectRef{Kind: doc.Get("kind").String(),
		Namespace: doc.Get("metadata.namespace").String(), Name: doc.Get("metadata.name").String()}}
	if o.Ref.Kind == "" || o.Ref.Name == "" {
		return o, fmt.Errorf("line %d: the object has no kind or name", r.Line)
	}
	return o, nil
}

func firstString(v gjson.Result, paths ...string) string {
	for _, p := range paths {
		if s := v.Get(p).String(); s != "" {
			return s
		}
	}
	return ""
}
