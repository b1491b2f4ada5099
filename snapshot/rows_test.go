package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/shareddata"
	"github.com/aa-grade/aa-grade/internal/testfs"
)

// tableFragment copies a real TSV head to a temporary file with the name of its table.
func tableFragment(t *testing.T, rel, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shareddata.Dir(t), "snapshot-fragments", "Scenario-2", rel))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	testfs.Write(t, path, string(b))
	return path
}

func TestRealEventsRows(t *testing.T) {
	var events []KubeEvent
	stats, err := ScanTable(tableFragment(t, "k8s_events_raw.tsv.HEAD-FRAGMENT", "k8s_events_raw.tsv"), func(r Row) error {
		e, err := r.Event()
		if err != nil {
			return err
		}
		events = append(events, e)
		return nil
	})
	if err != nil || stats.Rows == 0 || stats.Rows != len(events) || stats.BadRows != 0 {
		t.Fatalf("stats %+v, %v", stats, err)
	}
	e := events[0]
	want := ObjectRef{Kind: "Pod", Namespace: "ingress-nginx", Name: "ingress-nginx-controller-75cfcdbd64-pnlpk"}
	if e.Regarding != want || e.Reason != "RELOAD" || !strings.HasPrefix(e.Message, "NGINX reload triggered") || e.Watch != "ADDED" ||
		!e.Time.Equal(time.Date(2025, 12, 15, 17, 24, 44, 327494932, time.UTC)) || e.Count != 13 {
		t.Fatalf("event = %+v", e)
	}
}

func TestRealServiceMetricsRows(t *testing.T) {
	var points []MetricPoint
	stats, err := ScanTable(tableFragment(t, "metrics/service_frontend-proxy_raw.tsv.HEAD-FRAGMENT", "service_frontend-proxy_raw.tsv"), func(r Row) error {
		points = append(points, r.Metric())
		return nil
	})
	if err != nil || stats.Table != ServiceMetrics || len(points) == 0 {
		t.Fatalf("stats %+v, %v", stats, err)
	}
	p := points[0]
	if p.Name != "traces_span_metrics_duration_milliseconds_bucket" || p.Value != 2064 || p.Service != "frontend-proxy" ||
		p.BucketLE != "10.0" || p.Type != "duration_p95" || !p.Time.Equal(time.Date(2025, 12, 15, 17, 25, 2, 949000000, time.UTC)) {
		t.Fatalf("point = %+v", p)
	}
	tags, err := ParsePyDict(p.Tags)
	if err != nil || tags["service_name"] != "frontend-proxy" {
		t.Fatalf("tags = %v, %v", tags, err)
	}
}

// TestRealTracesHeadIsCutMidRecord: the traces head ends inside a quoted field; its complete
// records are read and the cut one is counted bad, not fatal.
func TestRealTracesHeadIsCutMidRecord(t *testing.T) {
	var spans []Span
	stats, err := ScanTable(tableFragment(t, "otel_traces_raw.tsv.HEAD-FRAGMENT", "otel_traces_raw.tsv"), func(r Row) error {
		spans = append(spans, r.Span())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.BadRows != 1 || len(stats.Problems) != 1 || !strings.Contains(stats.Problems[0].Error(), "otel_traces_raw.tsv") {
		t.Fatalf("stats = %+v", stats)
	}
	for _, s := range spans {
		if s.Service == "" || s.TraceID == "" || s.Time.IsZero() {
			t.Fatalf("span = %+v", s)
		}
	}
}

func TestScanTableRequiresColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k8s_events_raw.tsv")
	testfs.Write(t, path, "Timestamp\tOther\n2025-12-15 17:24:44\tx\n")
	if _, err := ScanTable(path, nil); err == nil || !strings.Contains(err.Error(), "no Body column") {
		t.Fatalf("err = %v", err)
	}
}
