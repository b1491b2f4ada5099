package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// realFragments is the folder of real snapshot fragments beside the project, when present.
var realFragments = filepath.Join("..", "..", "..", "shared", "itbench", "snapshot-fragments", "Scenario-2")

// The headers of the real tables, as the recorder writes them (the real fragments and
// ../shared/itbench/README.md); logs, events and objects share the log schema.
var (
	realLogHeader = "Timestamp\tTimestampTime\tTraceId\tSpanId\tTraceFlags\tSeverityText\tSeverityNumber\tServiceName\tBody\t" +
		"ResourceSchemaUrl\tResourceAttributes\tScopeSchemaUrl\tScopeName\tScopeVersion\tScopeAttributes\tLogAttributes\tEventName"
	realTraceHeader = "Timestamp\tTraceId\tSpanId\tParentSpanId\tTraceState\tSpanName\tSpanKind\tServiceName\tResourceAttributes\t" +
		"ScopeName\tScopeVersion\tSpanAttributes\tDuration\tStatusCode\tStatusMessage\tEvents.Timestamp\tEvents.Name\tEvents.Attributes\t" +
		"Links.TraceId\tLinks.SpanId\tLinks.TraceState\tLinks.Attributes"
	realServiceMetricsHeader = "metric_name\ttimestamp\tvalue\tservice_name\tnamespace\tbucket_le\ttags\tmetric_type\tstatus_code"
	realPodMetricsHeader     = "metric_name\ttimestamp\tvalue\tpod_name\tnamespace\ttags"
)

// TestGeneratedFormatsFollowTheRealFiles locks the conventions of the real snapshots that a
// generated task must keep (docs/generated-tasks.md, "Formats"). Each check runs on the real
// fragments too when they are here, so a check that the real data would fail is caught.
func TestGeneratedFormatsFollowTheRealFiles(t *testing.T) {
	for _, c := range []struct {
		fault string
		seed  uint64
	}{{"", 5}, {"schedule+oom", 9}} {
		t.Run(fmt.Sprintf("%s-%d", c.fault, c.seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "task")
			if _, err := Generate(dir, Options{Fault: c.fault, Seed: c.seed}); err != nil {
				t.Fatal(err)
			}
			checkHeader(t, filepath.Join(dir, "otel_traces_raw.tsv"), realTraceHeader)
			checkHeader(t, filepath.Join(dir, "otel_logs_raw.tsv"), realLogHeader)
			checkHeader(t, filepath.Join(dir, "k8s_events_raw.tsv"), realLogHeader)
			checkHeader(t, filepath.Join(dir, "k8s_objects_raw.tsv"), realLogHeader)
			metrics, _ := filepath.Glob(filepath.Join(dir, "metrics", "*_raw.tsv"))
			if len(metrics) == 0 {
				t.Fatal("no metrics file")
			}
			for _, m := range metrics {
				want := realPodMetricsHeader
				if strings.HasPrefix(filepath.Base(m), "service_") {
					want = realServiceMetricsHeader
				}
				checkHeader(t, m, want)
			}
			checkTimeOrder(t, filepath.Join(dir, "otel_traces_raw.tsv"))
			checkTimeOrder(t, filepath.Join(dir, "otel_logs_raw.tsv"))
			checkTimeOrder(t, filepath.Join(dir, "k8s_events_raw.tsv"))
			checkSortedAttributes(t, filepath.Join(dir, "otel_traces_raw.tsv"), "SpanAttributes", "ResourceAttributes")
			checkSortedAttributes(t, filepath.Join(dir, "otel_logs_raw.tsv"), "ResourceAttributes")
			alerts, _ := filepath.Glob(filepath.Join(dir, "alerts", "*.json"))
			var atFiles, stateFiles int
			for _, a := range alerts {
				checkAlertsFile(t, a)
				switch {
				case strings.HasPrefix(filepath.Base(a), "alerts_at_"):
					atFiles++
				case strings.HasPrefix(filepath.Base(a), "alerts_in_alerting_state_"):
					stateFiles++
				}
			}
			if atFiles < 25 || stateFiles != 1 {
				t.Errorf("%d alerts_at_ files and %d alerts_in_alerting_state_ files", atFiles, stateFiles)
			}
			checkEvents(t, filepath.Join(dir, "k8s_events_raw.tsv"))
			checkObjects(t, filepath.Join(dir, "k8s_objects_raw.tsv"))
		})
	}
	t.Run("real fragments", func(t *testing.T) {
		if _, err := os.Stat(realFragments); err != nil {
			t.Skipf("the real fragments are not here: %v", err)
		}
		checkHeader(t, filepath.Join(realFragments, "otel_traces_raw.tsv.HEAD-FRAGMENT"), realTraceHeader)
		checkHeader(t, filepath.Join(realFragments, "k8s_events_raw.tsv.HEAD-FRAGMENT"), realLogHeader)
		checkHeader(t, filepath.Join(realFragments, "metrics", "service_frontend-proxy_raw.tsv.HEAD-FRAGMENT"), realServiceMetricsHeader)
		alerts, _ := filepath.Glob(filepath.Join(realFragments, "alerts", "*.json"))
		if len(alerts) == 0 {
			t.Fatal("no real alerts file")
		}
		for _, a := range alerts {
			checkAlertsFile(t, a)
		}
		// The fragments are heads: check the complete records of the events table only.
		checkEvents(t, filepath.Join(realFragments, "k8s_events_raw.tsv.HEAD-FRAGMENT"))
	})
}

func checkHeader(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if string(line) != want {
		t.Errorf("%s: header\n%q, the real one is\n%q", filepath.Base(path), line, want)
	}
}

// scan reads every well-formed record of a table (a head fragment's cut last record is
// skipped).
func scan(t *testing.T, path string, fn func(snapshot.Row)) {
	t.Helper()
	if _, err := snapshot.ScanTable(path, func(r snapshot.Row) error { fn(r); return nil }); err != nil {
		t.Fatal(err)
	}
}

// checkTimeOrder: the recorder writes rows in time order.
func checkTimeOrder(t *testing.T, path string) {
	t.Helper()
	var last time.Time
	var lastLine, bad, rows int
	scan(t, path, func(r snapshot.Row) {
		rows++
		at, ok := r.Time("Timestamp")
		if !ok {
			t.Errorf("%s line %d: timestamp %q", filepath.Base(path), r.Line, r.Get("Timestamp"))
			return
		}
		if at.Before(last) {
			if bad < 3 {
				t.Errorf("%s line %d (%s %s %s) comes after line %d, later (%s)", filepath.Base(path), r.Line, r.Get("Timestamp"),
					r.Get("ServiceName"), r.Get("SpanName"), lastLine, last.Format(time.RFC3339Nano))
			}
			bad++
			return
		}
		last, lastLine = at, r.Line
	})
	if bad > 0 {
		t.Errorf("%s: %d of %d rows out of time order", filepath.Base(path), bad, rows)
	}
}

// pyDictKeys reads the keys of a Python dict repr of strings, {'a': 'b', 'c': 'd'}.
func pyDictKeys(s string) ([]string, error) {
	if s == "{}" {
		return nil, nil
	}
	quoted := func(i int) (string, int, error) {
		if i >= len(s) || s[i] != '\'' {
			return "", i, fmt.Errorf("no quote at %d", i)
		}
		var b strings.Builder
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
				if j < len(s) {
					b.WriteByte(s[j])
				}
			case '\'':
				return b.String(), j + 1, nil
			default:
				b.WriteByte(s[j])
			}
		}
		return "", len(s), fmt.Errorf("unterminated string")
	}
	if !strings.HasPrefix(s, "{") {
		return nil, fmt.Errorf("not a dict")
	}
	var keys []string
	for i := 1; ; {
		k, next, err := quoted(i)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(s[next:], ": ") {
			return nil, fmt.Errorf("no ': ' after key %q", k)
		}
		if _, next, err = quoted(next + 2); err != nil {
			return nil, err
		}
		keys = append(keys, k)
		switch {
		case s[next:] == "}":
			return keys, nil
		case strings.HasPrefix(s[next:], ", "):
			i = next + 2
		default:
			return nil, fmt.Errorf("unexpected %q", s[next:min(len(s), next+10)])
		}
	}
}

// checkSortedAttributes: map columns are Python dict reprs with sorted keys.
func checkSortedAttributes(t *testing.T, path string, columns ...string) {
	t.Helper()
	bad := 0
	scan(t, path, func(r snapshot.Row) {
		for _, c := range columns {
			keys, err := pyDictKeys(r.Get(c))
			if (err != nil || !slices.IsSorted(keys)) && bad < 3 {
				t.Errorf("%s line %d: %s %q: keys %v, %v", filepath.Base(path), r.Line, c, r.Get(c), keys, err)
			}
			if err != nil || !slices.IsSorted(keys) {
				bad++
			}
		}
	})
}

var (
	nanoActiveAt = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)
	currentValue = regexp.MustCompile(`\(current: ([0-9.eE+-]+)\)`)
	throttling   = regexp.MustCompile(`^(\d+)% throttling`)
)

// objectKeys reads the keys of the JSON object the decoder stands at, in file order, and
// skips their values.
func objectKeys(dec *json.Decoder) ([]string, error) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	_, err := dec.Token()
	return keys, err
}

// checkAlertsFile: four-space indentation, the recorder's key order (labels, annotations,
// state, activeAt, value) in alerts_at_ files and the API's sorted keys in
// alerts_in_alerting_state_ ones, activeAt with nanoseconds, and the value the description
// quotes.
func checkAlertsFile(t *testing.T, path string) {
	t.Helper()
	name := filepath.Base(path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var again bytes.Buffer
	enc := json.NewEncoder(&again)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	// The same document indented by four spaces, keys aside (Go sorts them); the recorder's
	// files end without a newline, the API's answer with one.
	text := string(b)
	if lines, want := strings.Count(strings.TrimSuffix(text, "\n"), "\n"), strings.Count(strings.TrimRight(again.String(), "\n"), "\n"); lines != want ||
		!strings.HasPrefix(text, "[\n    {") && !strings.HasPrefix(text, "{\n    \"") && text != "[]" {
		t.Errorf("%s is not indented by four spaces: %.80q", name, b)
	}
	if api := strings.HasPrefix(name, "alerts_in_alerting_state_"); strings.HasSuffix(text, "\n") != api {
		t.Errorf("%s: ends with a newline: %v, the real files: %v", name, !api, api)
	}
	wantOrder := []string{"labels", "annotations", "state", "activeAt", "value"}
	var alerts []json.RawMessage
	if strings.HasPrefix(name, "alerts_in_alerting_state_") {
		wantOrder = []string{"activeAt", "annotations", "labels", "state", "value"}
		keys, err := objectKeys(json.NewDecoder(bytes.NewReader(b)))
		if err != nil || !slices.Equal(keys, []string{"data", "status", "timestamp"}) {
			t.Errorf("%s: top-level keys %v %v", name, keys, err)
		}
		var api struct {
			Data struct {
				Alerts []json.RawMessage `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &api); err != nil {
			t.Fatal(err)
		}
		alerts = api.Data.Alerts
	} else if err := json.Unmarshal(b, &alerts); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, raw := range alerts {
		keys, err := objectKeys(json.NewDecoder(bytes.NewReader(raw)))
		if err != nil || !slices.Equal(keys, wantOrder) {
			t.Errorf("%s: alert keys %v %v, want %v", name, keys, err, wantOrder)
		}
		var a struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			ActiveAt    string            `json:"activeAt"`
			Value       string            `json:"value"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		if !nanoActiveAt.MatchString(a.ActiveAt) {
			t.Errorf("%s: %s activeAt %q has no nanoseconds", name, a.Labels["alertname"], a.ActiveAt)
		}
		value, err := strconv.ParseFloat(a.Value, 64)
		if err != nil {
			t.Errorf("%s: %s value %q: %v", name, a.Labels["alertname"], a.Value, err)
		}
		desc := a.Annotations["description"]
		if m := currentValue.FindStringSubmatch(desc); m != nil {
			if quoted, err := strconv.ParseFloat(m[1], 64); err != nil || quoted != value {
				t.Errorf("%s: %s value %s, the description says %s", name, a.Labels["alertname"], a.Value, m[1])
			}
		}
		if m := throttling.FindStringSubmatch(desc); m != nil {
			if pct, _ := strconv.Atoi(m[1]); fmt.Sprintf("%.0f", value*100) != strconv.Itoa(pct) {
				t.Errorf("%s: %s value %s, the description says %s%%", name, a.Labels["alertname"], a.Value, m[1])
			}
		}
	}
}

// checkEvents: every Event recorded twice, as events.k8s.io/v1 (regarding, note) then core
// v1 (involvedObject, message), both with the Event's name in the row's event.name.
func checkEvents(t *testing.T, path string) {
	t.Helper()
	eventName := regexp.MustCompile(`'event\.name': '([^']*)'`)
	type ev struct {
		APIVersion     string `json:"apiVersion"`
		Metadata       struct{ Name string }
		Regarding      json.RawMessage `json:"regarding"`
		Note           *string         `json:"note"`
		InvolvedObject json.RawMessage `json:"involvedObject"`
		Message        *string         `json:"message"`
	}
	var modern, core int
	var pending string // the name of the events.k8s.io/v1 record waiting for its core twin
	scan(t, path, func(r snapshot.Row) {
		var body struct {
			Object ev     `json:"object"`
			Type   string `json:"type"`
		}
		if err := json.Unmarshal([]byte(r.Get("Body")), &body); err != nil {
			t.Errorf("line %d: %v", r.Line, err)
			return
		}
		e := body.Object
		m := eventName.FindStringSubmatch(r.Get("LogAttributes"))
		if e.Metadata.Name == "" {
			t.Errorf("line %d: an Event without a name", r.Line)
		}
		if m == nil {
			t.Errorf("line %d: no event.name in the log attributes %s", r.Line, r.Get("LogAttributes"))
		} else if m[1] != e.Metadata.Name {
			t.Errorf("line %d: event.name %q, the Event is %q", r.Line, m[1], e.Metadata.Name)
		}
		switch e.APIVersion {
		case "events.k8s.io/v1":
			modern++
			wantEventFields(t, r.Line, e.APIVersion, map[string]bool{"regarding": e.Regarding != nil, "note": e.Note != nil},
				map[string]bool{"involvedObject": e.InvolvedObject != nil, "message": e.Message != nil})
			pending = e.Metadata.Name
		case "v1":
			core++
			wantEventFields(t, r.Line, e.APIVersion, map[string]bool{"involvedObject": e.InvolvedObject != nil, "message": e.Message != nil},
				map[string]bool{"regarding": e.Regarding != nil, "note": e.Note != nil})
			if pending != e.Metadata.Name {
				t.Errorf("line %d: core v1 Event %q does not follow its events.k8s.io/v1 twin (%q)", r.Line, e.Metadata.Name, pending)
			}
			pending = ""
		default:
			t.Errorf("line %d: Event apiVersion %q", r.Line, e.APIVersion)
		}
	})
	if modern == 0 || core == 0 {
		t.Errorf("%s: %d events.k8s.io/v1 records and %d core v1 ones, want both kinds", filepath.Base(path), modern, core)
	}
	if modern-core > 1 || core > modern {
		t.Errorf("%s: %d events.k8s.io/v1 records and %d core v1 ones, want a core twin for each but the last at most", filepath.Base(path), modern, core)
	}
}

// wantEventFields checks that an Event of apiVersion has each of its own fields (has: name
// -> set) and none of the other version's (lacks), each field its own failure.
func wantEventFields(t *testing.T, line int, apiVersion string, has, lacks map[string]bool) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(has)) {
		if !has[name] {
			t.Errorf("line %d: an %s Event without %s", line, apiVersion, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lacks)) {
		if lacks[name] {
			t.Errorf("line %d: an %s Event with %s", line, apiVersion, name)
		}
	}
}

// checkObjects: pod-template hashes as Kubernetes writes them, one uid per object, and a
// resourceVersion that changes exactly when the object does.
func checkObjects(t *testing.T, path string) {
	t.Helper()
	dumps, err := snapshot.ReadObjectDumps(path)
	if err != nil || len(dumps) < 2 {
		t.Fatalf("%d dumps: %v", len(dumps), err)
	}
	hashRE := regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{8,10}$`)
	owner := map[string]snapshot.ObjectRef{}
	type seen struct{ body, rv string }
	last := map[snapshot.ObjectRef]seen{}
	hashes := 0
	for i, d := range dumps {
		for ref, raw := range d.Bodies {
			var o map[string]any
			if err := json.Unmarshal([]byte(raw), &o); err != nil {
				t.Fatal(err)
			}
			meta, _ := o["metadata"].(map[string]any)
			uid, _ := meta["uid"].(string)
			if prev, ok := owner[uid]; uid == "" || ok && prev != ref {
				t.Errorf("dump %d: %v has uid %q, as %v does", i+1, ref, uid, prev)
			}
			owner[uid] = ref
			if l, ok := meta["labels"].(map[string]any); ok && l["pod-template-hash"] != nil {
				hashes++
				h, _ := l["pod-template-hash"].(string)
				if !hashRE.MatchString(h) {
					t.Errorf("%v: pod-template-hash %q", ref, h)
				}
			}
			rv, _ := meta["resourceVersion"].(string)
			if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
				t.Errorf("%v: resourceVersion %q", ref, rv)
			}
			delete(meta, "resourceVersion")
			body, _ := json.Marshal(o)
			if p, ok := last[ref]; ok {
				switch {
				case p.body != string(body) && p.rv == rv:
					t.Errorf("dump %d: %v changed and kept resourceVersion %s", i+1, ref, rv)
				case p.body == string(body) && p.rv != rv:
					t.Errorf("dump %d: %v did not change and its resourceVersion moved from %s to %s", i+1, ref, p.rv, rv)
				}
			}
			last[ref] = seen{string(body), rv}
		}
	}
	if hashes == 0 {
		t.Error("no pod-template-hash label")
	}
}
