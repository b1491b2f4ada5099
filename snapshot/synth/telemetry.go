package synth

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// route is one kind of user request: the first service the frontend calls for it.
type route struct {
	name   string
	target string
}

var routes = []route{
	{"GET /api/products", "product-catalog"}, {"GET /api/recommendations", "recommendation"},
	{"GET /api/data", "ad"}, {"GET /api/cart", "cart"}, {"POST /api/checkout", "checkout"},
	{"GET /api/shipping", "shipping"}, {"GET /api/currency", "currency"},
}

// rpcNames gives each service the operation its server spans are named after.
var rpcNames = map[string]string{
	"frontend-proxy": "ingress", "frontend": "HTTP GET", "ad": "oteldemo.AdService/GetAds",
	"cart": "oteldemo.CartService/GetCart", "valkey-cart": "HGET", "checkout": "oteldemo.CheckoutService/PlaceOrder",
	"currency": "oteldemo.CurrencyService/Convert", "email": "POST /send_order_confirmation",
	"payment": "oteldemo.PaymentService/Charge", "product-catalog": "oteldemo.ProductCatalogService/GetProduct",
	"recommendation": "oteldemo.RecommendationService/ListRecommendations", "shipping": "oteldemo.ShippingService/GetQuote",
	"quote": "POST /getquote", "kafka": "orders publish", "image-provider": "GET /images",
}

// minuteCounts accumulates a service's calls per minute, for the service metrics.
type minuteCounts struct{ ok, errors int }

// telemetry writes traces and logs by simulating requests in time order, and remembers call
// counts for the metrics.
type telemetry struct {
	w      *world
	traces *snapshot.TSVWriter
	logs   *snapshot.TSVWriter
	counts map[string]map[int64]*minuteCounts // service -> minute -> counts
}

func (w *world) requestInterval() time.Duration {
	if w.large {
		return 25 * time.Millisecond
	}
	return 6 * time.Second
}

func (tm *telemetry) run() error {
	w := tm.w
	step := w.requestInterval()
	for t := w.start; t.Before(w.end); t = t.Add(step/2 + time.Duration(w.rng.Int64N(int64(step)))) {
		r := routes[w.rng.IntN(len(routes))]
		trace := w.hex(32)
		if _, _, err := tm.call(trace, "", "load-generator", "frontend-proxy", t, []string{"frontend", r.target}); err != nil {
			return err
		}
	}
	return nil
}

// call simulates caller -> callee at t along path (the services further down this request)
// and writes the callee's server span, its children and its logs. It returns the span's
// duration and the error the caller sees ("" when the call succeeded).
func (tm *telemetry) call(trace, parent, caller, callee string, t time.Time, path []string) (time.Duration, string, error) {
	w := tm.w
	f := w.fault
	s := w.byName[callee]
	pods, _ := w.podsAt(s, t)
	cut := f.kind == "partition" && caller == f.caller && callee == f.victim && w.degraded(callee, t)
	blocked := f.kind == "netpol" && callee == f.victim && w.degraded(callee, t)
	down := len(pods) == 0 || (callee == f.victim && (f.kind == "bad-image" || f.kind == "oom") && w.degraded(callee, t))
	if cut || blocked || down {
		tm.count(callee, t, false) // the callee never sees the request
		return 5 * time.Second, fmt.Sprintf("%s:%d: %s", callee, s.port, f.symptom()), nil
	}
	p := pods[w.rng.IntN(len(pods))]
	span := w.hex(16)
	duration := time.Duration(2+w.rng.IntN(30)) * time.Millisecond
	var failure string
	children := slices.Clone(s.calls)
	if len(path) > 0 {
		children = path[:1]
	}
	for _, child := range children {
		if child == "flagd" || child == "kafka" && w.rng.IntN(3) > 0 {
			continue
		}
		d, err, werr := tm.call(trace, span, callee, child, t.Add(duration/4), path[min(1, len(path)):])
		if werr != nil {
			return 0, "", werr
		}
		duration += d
		if err != "" && failure == "" {
			failure = err
		}
	}
	if callee == f.victim && w.degraded(callee, t) {
		switch f.kind {
		case "flag":
			failure = fmt.Sprintf("rpc error: code = Internal desc = %s: feature flag %s is enabled", rpcNames[callee], f.flag)
		case "env":
			dep := w.byName[s.calls[0]]
			failure = fmt.Sprintf("dial tcp %s:%d: connect: connection refused", dep.name, dep.port+1)
		case "hpa":
			duration *= 40
			if w.rng.IntN(10) < 4 {
				failure = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
			}
		}
	}
	status, message := "Unset", ""
	if failure != "" {
		status, message = "Error", failure
	}
	tm.count(callee, t, failure == "")
	resource := fmt.Sprintf("{'k8s.deployment.name': '%s', 'k8s.namespace.name': '%s', 'k8s.node.name': '%s', 'k8s.pod.ip': '%s', 'k8s.pod.name': '%s', 'service.name': '%s', 'service.namespace': 'opentelemetry-demo', 'telemetry.sdk.language': '%s'}",
		callee, appNamespace, p.node, p.ip, p.name, callee, s.lang)
	attrs := fmt.Sprintf("{'rpc.method': '%s', 'net.peer.name': '%s', 'app.request.id': '%s'}", rpcNames[callee], caller, w.hex(8))
	if err := tm.traces.Write(stamp(t), trace, span, parent, "", rpcNames[callee], "Server", callee, resource,
		"opentelemetry.instrumentation", "0.58b0", attrs, fmt.Sprint(duration.Nanoseconds()), status, message,
		"[]", "[]", "[]", "[]", "[]", "[]", "[]"); err != nil {
		return 0, "", err
	}
	if failure != "" {
		err := tm.log(t.Add(duration), trace, span, callee, p, "ERROR", 17, fmt.Sprintf("%s failed: %s", rpcNames[callee], failure))
		return duration, fmt.Sprintf("%s: %s", callee, failure), err
	}
	if w.rng.IntN(3) == 0 {
		err := tm.log(t.Add(duration), trace, span, callee, p, "INFO", 9, fmt.Sprintf("%s handled in %dms", rpcNames[callee], duration.Milliseconds()))
		return duration, "", err
	}
	return duration, "", nil
}

func (tm *telemetry) log(t time.Time, trace, span, service string, p pod, severity string, number int, body string) error {
	resource := fmt.Sprintf("{'k8s.deployment.name': '%s', 'k8s.namespace.name': '%s', 'k8s.pod.name': '%s', 'service.name': '%s'}", service, appNamespace, p.name, service)
	return tm.logs.Write(stamp(t), t.Format("2006-01-02 15:04:05"), trace, span, "1", severity, fmt.Sprint(number), service, body,
		"", resource, "", "opentelemetry.sdk", "1.37.0", "{}", "{}", "")
}

func (tm *telemetry) count(service string, t time.Time, ok bool) {
	m := tm.counts[service]
	if m == nil {
		m = map[int64]*minuteCounts{}
		tm.counts[service] = m
	}
	minute := t.Unix() / 60
	c := m[minute]
	if c == nil {
		c = &minuteCounts{}
		m[minute] = c
	}
	if ok {
		c.ok++
	} else {
		c.errors++
	}
}

// stamp writes a timestamp as the recorder does: UTC, nanoseconds, no zone.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000000") }

// metricStamp writes a metrics timestamp (milliseconds).
func metricStamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// writeServiceMetrics writes one service's call counters, cumulative, one sample a minute.
func (tm *telemetry) writeServiceMetrics(out *snapshot.TSVWriter, s *service) error {
	w := tm.w
	var ok, errs int
	for t := w.start.Truncate(time.Minute).Add(time.Minute); t.Before(w.end); t = t.Add(time.Minute) {
		if c := tm.counts[s.name][t.Unix()/60-1]; c != nil {
			ok += c.ok
			errs += c.errors
		}
		for _, row := range []struct {
			code  string
			value int
		}{{"STATUS_CODE_UNSET", ok}, {"STATUS_CODE_ERROR", errs}} {
			tags := fmt.Sprintf("{'namespace': '%s', 'service_name': '%s', 'span_kind': 'SPAN_KIND_SERVER', 'span_name': '%s', 'status_code': '%s'}", appNamespace, s.name, rpcNames[s.name], row.code)
			if err := out.Write("traces_span_metrics_calls_total", metricStamp(t), fmt.Sprintf("%d.0", row.value), s.name, appNamespace, "", tags, "calls", row.code); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePodMetrics writes one pod's CPU, memory and restarts, one sample a minute while it
// exists.
func (w *world) writePodMetrics(out *snapshot.TSVWriter, s *service, p pod) error {
	var cpu float64
	victim := s.name == w.fault.victim
	for t := w.start.Truncate(time.Minute).Add(time.Minute); t.Before(w.end); t = t.Add(time.Minute) {
		pods, _ := w.podsAt(s, t)
		if !slices.ContainsFunc(pods, func(q pod) bool { return q.name == p.name }) {
			continue
		}
		rate := 0.01 + w.rng.Float64()*0.02
		memory := 90e6 + w.rng.Float64()*20e6
		restarts := 0
		if victim && !t.Before(w.faultAt) {
			switch w.fault.kind {
			case "hpa":
				rate = 0.48 + w.rng.Float64()*0.02 // pinned at its limit
			case "oom":
				memory = 30e6 + float64(t.Sub(w.faultAt)%(90*time.Second))/float64(90*time.Second)*20e6
				restarts = int(t.Sub(w.faultAt)/(90*time.Second)) + 1
			}
		}
		cpu += rate * 60
		tags := fmt.Sprintf("{'container': '%s', 'namespace': '%s', 'node': '%s', 'pod': '%s'}", s.name, appNamespace, p.node, p.name)
		for _, m := range []struct {
			name  string
			value float64
		}{{"container_cpu_usage_seconds_total", cpu}, {"container_memory_working_set_bytes", memory}, {"kube_pod_container_status_restarts_total", float64(restarts)}} {
			if err := out.Write(m.name, metricStamp(t), strings.TrimSuffix(fmt.Sprintf("%.3f", m.value), "0"), p.name, appNamespace, tags); err != nil {
				return err
			}
		}
	}
	return nil
}
