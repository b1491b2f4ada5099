//go:build unix

package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// BenchmarkCall times Anthropic Messages calls on 127.0.0.1, plain and streamed, straight to
// the fake provider and through the gateway (its events and turns encoded as the trajectory
// would, the turns' new messages found as the trajectory finds them): ns/op
// is the time to the answer's last byte, first-ns/op to its first, and cpu-ns/op the CPU the
// whole process spent on a call (client, gateway and provider alike), which a machine's other
// load inflates far less than the times. What the gateway adds is the difference between the
// two (docs/benchmarks.md).
func BenchmarkCall(b *testing.B) {
	for _, stream := range []bool{false, true} {
		f := newProvider(b, gateway.Messages)
		e := newEpisode(b, f, func(c *gateway.Config) {
			enc := json.NewEncoder(io.Discard)
			c.Record = func(ev model.Event) { enc.Encode(ev) }
			var news runfolder.NewMessages
			c.Turn = func(n int, req model.Request, reply model.Reply, err error) {
				enc.Encode(runfolder.TurnRecord{Kind: model.KindTurn, Turn: n, Input: news.Next(req, err != nil), Reply: reply.Message, Usage: reply.Usage})
			}
		})
		body := requestBody(gateway.Messages, runModel, stream)
		direct := func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+gateway.Messages.Path(), strings.NewReader(body))
			req.Header.Set("x-api-key", canary)
			return req
		}
		through := func() *http.Request { return e.request(b, gateway.Messages, gateway.Messages.Path(), body) }
		name := map[bool]string{false: "plain", true: "stream"}[stream]
		b.Run(name+"/direct", func(b *testing.B) { timeCalls(b, direct) })
		b.Run(name+"/gateway", func(b *testing.B) { timeCalls(b, through) })
	}
}

// timeCalls makes b.N calls one after another, each answer read whole, and reports the mean
// time to the first byte of the answers' bodies and the mean CPU time of a call.
func timeCalls(b *testing.B, request func() *http.Request) {
	var first time.Duration
	cpu := cpuTime(b)
	for b.Loop() {
		start := time.Now()
		resp, err := http.DefaultClient.Do(request())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %v", resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpuTime(b)-cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(first)/n, "first-ns/op")
}

// cpuTime is the CPU time the process has spent so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
