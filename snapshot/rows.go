package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// LogRecord is a row of the OpenTelemetry log schema (events, objects and logs tables).
type LogRecord struct {
	Time               time.Time
	Severity           string
	Service            string
	Body               string // JSON for events and objects
	ResourceAttributes string // a Python dict repr; see ParsePyDict
	LogAttributes      string
	EventName          string
}

// Log reads a row of the log schema.
func (r Row) Log() LogRecord {
	t, _ := r.Time("Timestamp")
	return LogRecord{Time: t, Severity: r.Get("SeverityText"), Service: r.Get("ServiceName"), Body: r.Get("Body"),
		ResourceAttributes: r.Get("ResourceAttributes"), LogAttributes: r.Get("LogAttributes"), EventName: r.Get("EventName")}
}

// Span is a row of the traces table.
type Span struct {
	Time          time.Time
	TraceID       string
	SpanID        string
	ParentSpanID  string
	Name          string
	Kind          string
	Service       string
	Attributes    string // Python dict repr
	Resource      string // Python dict repr
	Duration      time.Duration
	StatusCode    string // Error, Unset, Ok
	StatusMessage string
}

// Span reads a row of the traces table.
func (r Row) Span() Span {
	t, _ := r.Time("Timestamp")
	ns, _ := strconv.ParseInt(strings.TrimSpace(r.Get("Duration")), 10, 64)
	return Span{Time: t, TraceID: r.Get("TraceId"), SpanID: r.Get("SpanId"), ParentSpanID: r.Get("ParentSpanId"),
		Name: r.Get("SpanName"), Kind: r.Get("SpanKind"), Service: r.Get("ServiceName"),
		Attributes: r.Get("SpanAttributes"), Resource: r.Get("ResourceAttributes"),
		Duration: time.Duration(ns), StatusCode: r.Get("StatusCode"), StatusMessage: r.Get("StatusMessage")}
}

// MetricPoint is a row of a pod or service metrics table. Values are raw counters and
// histogram buckets, not rates.
type MetricPoint struct {
	Name       string
	Time       time.Time
	Value      float64
	Pod        string // pod metrics
	Service    string // service metrics
	Namespace  string
	BucketLE   string // service metrics: histogram bucket bound
	Tags       string // Python dict repr
	Type       string // service metrics
	StatusCode string // service metrics
}

// Metric reads a row of a metrics table.
func (r Row) Metric() MetricPoint {
	t, _ := r.Time("timestamp")
	v, _ := r.Float("value")
	return MetricPoint{Name: r.Get("metric_name"), Time: t, Value: v, Pod: r.Get("pod_name"), Service: r.Get("service_name"),
		Namespace: r.Get("namespace"), BucketLE: r.Get("bucket_le"), Tags: r.Get("tags"), Type: r.Get("metric_type"),
		StatusCode: r.Get("status_code")}
}

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
	e := KubeEvent{Time: t, Watch: doc.Get("type").String(), Type: obj.Get("type").String(), Reason: obj.Get("reason").String(),
		Message: firstString(obj, "note", "message"), Count: obj.Get("count").Int()}
	ref := obj.Get("regarding")
	if !ref.Exists() {
		ref = obj.Get("involvedObject")
	}
	e.Regarding = ObjectRef{Kind: ref.Get("kind").String(), Namespace: ref.Get("namespace").String(), Name: ref.Get("name").String()}
	if e.Count == 0 {
		e.Count = obj.Get("deprecatedCount").Int()
	}
	return e, nil
}

// KubeObject is the Kubernetes object in the Body of an objects row.
type KubeObject struct {
	Time   time.Time
	Ref    ObjectRef
	Owners []ObjectRef // metadata.ownerReferences, in the object's namespace
	Body   gjson.Result
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
	doc.Get("metadata.ownerReferences").ForEach(func(_, ref gjson.Result) bool {
		o.Owners = append(o.Owners, ObjectRef{Kind: ref.Get("kind").String(), Namespace: o.Ref.Namespace, Name: ref.Get("name").String()})
		return true
	})
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
