package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
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
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows == 0 {
		t.Errorf("no rows read")
	}
	if stats.Rows != len(events) {
		t.Errorf("%d rows counted, %d events seen", stats.Rows, len(events))
	}
	if stats.BadRows != 0 {
		t.Errorf("%d bad rows: %v", stats.BadRows, stats.Problems)
	}
	if t.Failed() {
		t.FailNow()
	}
	e := events[0]
	want := ObjectRef{Kind: "Pod", Namespace: "ingress-nginx", Name: "ingress-nginx-controller-75cfcdbd64-pnlpk"}
	if e.Regarding != want {
		t.Errorf("regarding %+v, want %+v", e.Regarding, want)
	}
	if got := fmt.Sprintf("reason %s, watch %s, count %d", e.Reason, e.Watch, e.Count); got != "reason RELOAD, watch ADDED, count 13" {
		t.Errorf("%s, want reason RELOAD, watch ADDED, count 13", got)
	}
	if !strings.HasPrefix(e.Message, "NGINX reload triggered") {
		t.Errorf("message %q, want it to start NGINX reload triggered", e.Message)
	}
	if at := time.Date(2025, 12, 15, 17, 24, 44, 327494932, time.UTC); !e.Time.Equal(at) {
		t.Errorf("time %v, want %v", e.Time, at)
	}
	if t.Failed() {
		t.Fatalf("event = %+v", e)
	}
}

// TestRealServiceMetricsRows reads the real head of a service metrics table by column name.
func TestRealServiceMetricsRows(t *testing.T) {
	var first []string // the row's fields are valid only during the call
	stats, err := ScanTable(tableFragment(t, "metrics/service_frontend-proxy_raw.tsv.HEAD-FRAGMENT", "service_frontend-proxy_raw.tsv"), func(r Row) error {
		if first == nil {
			at, _ := r.Time("timestamp")
			first = []string{r.Get("metric_name"), r.Get("value"), r.Get("service_name"), r.Get("bucket_le"), r.Get("metric_type"), at.Format(time.RFC3339Nano)}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Table != ServiceMetrics {
		t.Errorf("table %v, want %v", stats.Table, ServiceMetrics)
	}
	if stats.Rows == 0 {
		t.Errorf("no rows read")
	}
	if t.Failed() {
		t.FailNow()
	}
	want := "traces_span_metrics_duration_milliseconds_bucket 2064.0 frontend-proxy 10.0 duration_p95 2025-12-15T17:25:02.949Z"
	if got := strings.Join(first, " "); got != want {
		t.Fatalf("first row: %s, want %s", got, want)
	}
}

// TestRealTracesHeadIsCutMidRecord: the traces head ends inside the quoted field of its first
// record, which is counted bad, not fatal.
func TestRealTracesHeadIsCutMidRecord(t *testing.T) {
	stats, err := ScanTable(tableFragment(t, "otel_traces_raw.tsv.HEAD-FRAGMENT", "otel_traces_raw.tsv"), func(r Row) error {
		t.Fatalf("line %d was read: %q", r.Line, r.fields)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.BadRows != 1 {
		t.Errorf("%d bad rows, want 1", stats.BadRows)
	}
	if len(stats.Problems) != 1 {
		t.Fatalf("problems %v, want one", stats.Problems)
	}
	if !textcheck.Has(t, "the problem", stats.Problems[0].Error(), "otel_traces_raw.tsv line 2: the file ends inside a quoted field") || t.Failed() {
		t.FailNow()
	}

}

func TestScanTableRequiresColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k8s_events_raw.tsv")
	testfs.Write(t, path, "Timestamp\tOther\n2025-12-15 17:24:44\tx\n")
	if _, err := ScanTable(path, nil); err == nil || !strings.Contains(err.Error(), "no Body column") {
		t.Fatalf("err = %v", err)
	}
}
