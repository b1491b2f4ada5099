package validate

import (
	"testing"
	"time"
)

func seriesOf(counter bool, start time.Time, values ...float64) *series {
	s := &series{counter: counter, at: map[time.Time]float64{}}
	for i, v := range values {
		s.at[start.Add(time.Duration(i)*time.Minute)] = v
	}
	return s
}

// TestShapeIsNameAndScaleFree: a series' shape is its steps' means against its own mean, from
// the step it starts at after the first alert; a counter's shape is its increase's; the same
// samples scaled or moved in time with the alerts have the same shape, and a flat series none.
func TestShapeIsNameAndScaleFree(t *testing.T) {
	alert := time.Date(2025, 12, 15, 17, 30, 0, 0, time.UTC)
	rise := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5, 5, 5, 5, 9, 9, 9, 9, 9}
	start, sig := seriesOf(false, alert.Add(-10*time.Minute), rise...).shape(alert)
	if start != "<<" || sig != "__-^" {
		t.Errorf("a rise from 10 minutes before the alert: %q %q, want \"<<\" \"__-^\"", start, sig)
	}
	scaled := make([]float64, len(rise))
	for i, v := range rise {
		scaled[i] = 1000 * v
	}
	moved := 3 * time.Hour
	if s2, sig2 := seriesOf(false, alert.Add(moved-10*time.Minute), scaled...).shape(alert.Add(moved)); s2 != start ||
		sig2 != sig {
		t.Errorf("scaled and moved: %q %q, want %q %q", s2, sig2, start, sig)
	}
	var total float64
	cumulative := make([]float64, len(rise)+1)
	for i, v := range rise {
		total += v
		cumulative[i+1] = total
	}
	if s3, sig3 := seriesOf(true, alert.Add(-11*time.Minute), cumulative...).shape(alert); s3 != start || sig3 != sig {
		t.Errorf("as a counter: %q %q, want %q %q (the shape of its increase)", s3, sig3, start, sig)
	}
	if _, flat := seriesOf(false, alert, 7, 7, 7, 7, 7, 7, 7).shape(alert); flat != "" {
		t.Errorf("a flat series has the shape %q, want none", flat)
	}
}
