package validate

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// shapeStep is the width of a step of a metric series' shape, and shapeSteps how many steps a
// shape has at most: an incident's hour, in steps a minute's jitter seldom moves a sample across.
const (
	shapeStep  = 5 * time.Minute
	shapeSteps = 12
)

// maxSeries bounds the metric series a task keeps (pods times their metrics, services
// times their span metrics and status codes: hundreds in a real task).
const maxSeries = 5000

// series is the samples of one metric of one pod or service, over time.
type series struct {
	counter bool // cumulative: its shape is that of its increase
	at      map[time.Time]float64
}

// metricSeries reads the samples of a metrics file, summing the series a metric has for one
// pod or service and status code (a span metric's operations, which a shape need not tell
// apart), leaving out histogram buckets, whose count and sum are series of their own.
func (rd *reading) metricSeries(path string) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		if r.Get("bucket_le") != "" {
			return nil
		}
		t, ok := r.Time("timestamp")
		v, err := strconv.ParseFloat(r.Get("value"), 64)
		if !ok || err != nil {
			return nil
		}
		name := r.Get("metric_name")
		key := strings.Join([]string{name, r.Get("pod_name"), r.Get("service_name"), r.Get("status_code")}, " ")
		s := rd.series[key]
		if s == nil {
			if len(rd.series) >= maxSeries {
				return nil
			}
			s = &series{counter: counterMetric(name, r.Get("metric_type")), at: map[time.Time]float64{}}
			rd.series[key] = s
		}
		s.at[t] += v
		return nil
	})
	return err
}

// counterMetric says whether a metric is cumulative, by its type or Prometheus' naming.
func counterMetric(name, kind string) bool {
	if strings.EqualFold(kind, "counter") {
		return true
	}
	for _, suffix := range []string{"_total", "_count", "_sum"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// shapeFeatures adds a feature for each metric series that changes: its metric, pod or
// service and shape (see shape), where the shape starts in steps after the first alert.
func (rd *reading) shapeFeatures() {
	for key, s := range rd.series {
		if start, sig := s.shape(rd.firstAlert); sig != "" {
			rd.counts["metric "+normalise(key)+" from "+start+" "+sig]++
		}
	}
}

// shape is a series' shape, name- and scale-free: its samples (for a counter, its increases)
// averaged over steps of shapeStep counted from the incident's start (the first alert), each
// step's mean told as below ("_"), near ("-") or above ("^") the series' mean by two thirds
// of a standard deviation; and the step it starts at, relative to the start. A series that
// does not change has no shape ("").
func (s *series) shape(start time.Time) (string, string) {
	times := slices.SortedFunc(maps.Keys(s.at), func(a, b time.Time) int { return a.Compare(b) })
	if len(times) < 3 {
		return "", ""
	}
	if start.IsZero() {
		start = times[0]
	}
	values := make([]float64, 0, len(times))
	for i, t := range times {
		v := s.at[t]
		if s.counter {
			if i == 0 {
				continue
			}
			if prev := s.at[times[i-1]]; v >= prev {
				v -= prev // else the counter was reset, and v is its increase since
			}
		}
		values = append(values, v)
	}
	if s.counter {
		times = times[1:]
	}
	first := stepOf(times[0], start)
	sums, counts := make([]float64, shapeSteps), make([]int, shapeSteps)
	for i, t := range times {
		if k := stepOf(t, start) - first; k < shapeSteps {
			sums[k] += values[i]
			counts[k]++
		}
	}
	var means []float64
	for k := range sums {
		if counts[k] > 0 {
			means = append(means, sums[k]/float64(counts[k]))
		}
	}
	mean, sd := meanSD(means)
	if sd <= 1e-9*math.Max(1, math.Abs(mean)) {
		return "", ""
	}
	sig := make([]byte, len(means))
	for i, m := range means {
		switch z := (m - mean) / sd; {
		case z < -2.0/3:
			sig[i] = '_'
		case z > 2.0/3:
			sig[i] = '^'
		default:
			sig[i] = '-'
		}
	}
	return stepName(first), string(sig)
}

func stepOf(t, start time.Time) int {
	return int(math.Floor(float64(t.Sub(start)) / float64(shapeStep)))
}

// stepName is a step relative to the start in words without digits, which normalise would mask.
func stepName(k int) string {
	if k < 0 {
		return strings.Repeat("<", min(-k, shapeSteps))
	}
	return strings.Repeat(">", min(k, shapeSteps))
}

func meanSD(xs []float64) (float64, float64) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sq / float64(len(xs)))
}
