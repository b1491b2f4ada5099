package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// Alert is one firing Prometheus alert of an alerts file.
type Alert struct {
	Name        string            // labels.alertname
	Labels      map[string]string // all labels
	Annotations map[string]string
	State       string
	ActiveAt    time.Time // zero when absent or unparsable
	Value       string
}

// AlertsFile is the content of one alerts file and the time the recorder took it.
type AlertsFile struct {
	Path   string
	Time   time.Time // from the file name; zero when the name carries none
	Alerts []Alert
}

// MaxAlertsFileBytes bounds one alerts file (real ones are a few KiB).
const MaxAlertsFileBytes = 64 << 20

// ReadAlertsFile reads an alerts file in any of the four shapes recorders wrote: a JSON
// array of alerts, `{"data":{"alerts":[...]}}`, `{"alerts":[...]}`, or one alert object.
func ReadAlertsFile(path string) (*AlertsFile, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Size() > MaxAlertsFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB allowed", path, info.Size(), MaxAlertsFileBytes>>20)
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	alerts, err := ParseAlerts(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &AlertsFile{Path: path, Time: AlertsFileTime(filepath.Base(path)), Alerts: alerts}, nil
}

// ParseAlerts reads the alerts of one document (see ReadAlertsFile for the shapes).
func ParseAlerts(doc []byte) ([]Alert, error) {
	if !jsonguard.Shallow(doc, 512) || !gjson.ValidBytes(doc) {
		return nil, fmt.Errorf("not valid JSON")
	}
	v := gjson.ParseBytes(doc)
	var list gjson.Result
	switch {
	case v.IsArray():
		list = v
	case v.Get("data.alerts").IsArray():
		list = v.Get("data.alerts")
	case v.Get("alerts").IsArray():
		list = v.Get("alerts")
	case v.IsObject() && v.Get("labels").IsObject():
		return []Alert{parseAlert(v)}, nil
	default:
		return nil, fmt.Errorf("no alerts: expected an array, {\"data\":{\"alerts\":[]}}, {\"alerts\":[]} or one alert")
	}
	var alerts []Alert
	var bad int
	list.ForEach(func(_, a gjson.Result) bool {
		if !a.IsObject() {
			bad++
			return true
		}
		alerts = append(alerts, parseAlert(a))
		return true
	})
	if bad > 0 {
		return alerts, fmt.Errorf("%d entries are not alert objects", bad)
	}
	return alerts, nil
}

func parseAlert(a gjson.Result) Alert {
	al := Alert{
		Labels:      stringMap(a.Get("labels")),
		Annotations: stringMap(a.Get("annotations")),
		State:       a.Get("state").String(),
		Value:       a.Get("value").String(),
	}
	al.Name = al.Labels["alertname"]
	if t, err := time.Parse(time.RFC3339Nano, a.Get("activeAt").String()); err == nil {
		al.ActiveAt = t
	}
	return al
}

func stringMap(v gjson.Result) map[string]string {
	m := map[string]string{}
	v.ForEach(func(k, val gjson.Result) bool {
		m[k.String()] = val.String()
		return true
	})
	return m
}

// The two file-name styles: alerts_at_2025-12-15T17-30-49.329092.json and
// alerts_in_alerting_state_2025-12-15T175223.904312Z.json.
var (
	alertsAtName    = regexp.MustCompile(`(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?`)
	alertsStateName = regexp.MustCompile(`(\d{4}-\d{2}-\d{2})T(\d{2})(\d{2})(\d{2})(\.\d+)?Z?`)
)

// AlertsFileTime reads the snapshot time (UTC) from an alerts file name; zero when absent.
func AlertsFileTime(name string) time.Time {
	name = strings.TrimSuffix(name, ".json")
	for _, re := range []*regexp.Regexp{alertsAtName, alertsStateName} {
		m := re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04:05.999999999", m[1]+"T"+m[2]+":"+m[3]+":"+m[4]+m[5])
		if err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
