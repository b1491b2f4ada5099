package snapshot

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

func TestParseAlertsShapes(t *testing.T) {
	one := `{"labels":{"alertname":"RequestErrorRate","namespace":"otel-demo","service_name":"cart"},"annotations":{"description":"d"},"state":"firing","activeAt":"2025-12-15T17:43:50.488970782Z","value":"1e-02"}`
	for name, doc := range map[string]string{
		"array":       "[" + one + "]",
		"data.alerts": `{"data":{"alerts":[` + one + `]},"status":"success"}`,
		"alerts":      `{"alerts":[` + one + `]}`,
		"one object":  one,
	} {
		t.Run(name, func(t *testing.T) {
			alerts, err := ParseAlerts([]byte(doc))
			if err != nil || len(alerts) != 1 {
				t.Fatalf("%v %+v", err, alerts)
			}
			a := alerts[0]
			want := time.Date(2025, 12, 15, 17, 43, 50, 488970782, time.UTC)
			for _, f := range []struct{ name, got, want string }{
				{"name", a.Name, "RequestErrorRate"}, {"service_name label", a.Labels["service_name"], "cart"},
				{"description", a.Annotations["description"], "d"}, {"state", a.State, "firing"}, {"value", a.Value, "1e-02"},
			} {
				if f.got != f.want {
					t.Errorf("alert %s %q, want %q", f.name, f.got, f.want)
				}
			}
			if !a.ActiveAt.Equal(want) {
				t.Errorf("alert active at %v, want %v", a.ActiveAt, want)
			}
			if t.Failed() {
				t.Fatalf("alert = %+v", a)
			}
		})
	}
	for name, doc := range map[string]string{
		"not JSON":    `[{"labels":`,
		"no alerts":   `{"status":"success"}`,
		"too deep":    strings.Repeat("[", 600) + strings.Repeat("]", 600),
		"not objects": `[1, 2]`,
	} {
		if _, err := ParseAlerts([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestAlertsFileTime(t *testing.T) {
	for name, want := range map[string]time.Time{
		"alerts_at_2025-12-15T17-30-49.329092.json":               time.Date(2025, 12, 15, 17, 30, 49, 329092000, time.UTC),
		"alerts_in_alerting_state_2025-12-15T175223.904312Z.json": time.Date(2025, 12, 15, 17, 52, 23, 904312000, time.UTC),
		"alerts_at_2025-12-15T17-30-49.json":                      time.Date(2025, 12, 15, 17, 30, 49, 0, time.UTC),
		"alerts.json":                                             {},
	} {
		if got := AlertsFileTime(name); !got.Equal(want) {
			t.Errorf("AlertsFileTime(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRealAlertsFiles reads the two real alerts files, one of each shape.
func TestRealAlertsFiles(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t), "snapshot-fragments", "Scenario-2", "alerts")
	at, err := ReadAlertsFile(filepath.Join(dir, "alerts_at_2025-12-15T17-30-49.329092.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(at.Alerts) != 5 {
		t.Fatalf("alerts_at: %d alerts, want 5: %+v", len(at.Alerts), at)
	}
	if name := at.Alerts[0].Name; name != "Watchdog" {
		t.Errorf("alerts_at: the first alert is %s, want Watchdog", name)
	}
	if at.Time.IsZero() {
		t.Errorf("alerts_at: no time read from the file name")
	}
	state, err := ReadAlertsFile(filepath.Join(dir, "alerts_in_alerting_state_2025-12-15T175223.904312Z.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Alerts) != 2 {
		t.Fatalf("alerts_in_alerting_state: %d alerts, want 2: %+v", len(state.Alerts), state)
	}
	if s := state.Alerts[0].Labels["service_name"]; s != "frontend-proxy" {
		t.Errorf("alerts_in_alerting_state: the first alert's service is %q, want frontend-proxy", s)
	}

	if !state.Time.After(at.Time) {
		t.Fatalf("times: %v then %v", at.Time, state.Time)
	}
}

func TestReadAlertsFileErrorsNameTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alerts", "alerts_at_2025-12-15T17-30-49.329092.json")
	testfs.Write(t, path, "{")
	if _, err := ReadAlertsFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
}

// TestCatalogFromAlertLabels: the objects an alert's labels name enter the catalogue.
func TestCatalogFromAlertLabels(t *testing.T) {
	c := NewCatalog()
	at := time.Date(2025, 12, 15, 17, 30, 0, 0, time.UTC)
	c.addAlert(Alert{Labels: map[string]string{"alertname": "KubePodCrashLooping", "namespace": "otel-demo", "pod": "cart-8546fdc74d-d68cn", "node": "worker-1"}}, at)
	c.addAlert(Alert{Labels: map[string]string{"alertname": "X", "deployment": "orphan"}}, at) // no namespace: cannot be named
	var got []string
	for _, e := range c.Entries() {
		got = append(got, e.Entity)
	}
	want := "Namespace/otel-demo,Node/worker-1,otel-demo/Pod/cart-8546fdc74d-d68cn"
	if strings.Join(got, ",") != want {
		t.Fatalf("catalogue = %v, want %s", got, want)
	}
	if e := c.Entries()[1]; !e.FirstSeen.Equal(at) || e.Sources[0] != "alerts" {
		t.Fatalf("node entry = %+v", e)
	}
}
