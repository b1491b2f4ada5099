package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/gateway"
	"github.com/aa-grade/aa-grade/harness/model"
)

// BenchmarkCall times Anthropic Messages calls on 127.0.0.1, plain and streamed, in pairs:
// one straight to the fake provider, then the same through the gateway (its events encoded as
// the trajectory would), so that both meet the same load of a shared machine. It reports the
// mean time to the first and to the last byte of each answer's body, and what the gateway adds
// (docs/benchmarks.md); ns/op is the pair's.
func BenchmarkCall(b *testing.B) {
	for _, stream := range []bool{false, true} {
		f := newProvider(b, gateway.Messages)
		e := newEpisode(b, f, func(c *gateway.Config) {
			enc := json.NewEncoder(io.Discard)
			c.Record = func(ev model.Event) { enc.Encode(ev) }
		})
		body := requestBody(gateway.Messages, runModel, stream)
		b.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(b *testing.B) {
			var direct, through timing
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL+gateway.Messages.Path(), strings.NewReader(body))
				req.Header.Set("x-api-key", canary)
				direct.add(b, req)
				through.add(b, e.request(b, gateway.Messages, gateway.Messages.Path(), body))
			}
			n := float64(b.N)
			b.ReportMetric(float64(direct.first)/n, "direct-first-ns/op")
			b.ReportMetric(float64(direct.last)/n, "direct-last-ns/op")
			b.ReportMetric(float64(through.first-direct.first)/n, "added-first-ns/op")
			b.ReportMetric(float64(through.last-direct.last)/n, "added-last-ns/op")
		})
	}
}

// timing sums the times to the first and the last byte of answers' bodies.
type timing struct{ first, last time.Duration }

// add makes the call req and reads its answer whole, timing it.
func (t *timing) add(b *testing.B, req *http.Request) {
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
		b.Fatal(err)
	}
	t.first += time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%d %v", resp.StatusCode, err)
	}
	t.last += time.Since(start)
}
