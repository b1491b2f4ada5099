package synth

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// routes are the user requests the load generator sends: the path through the shop.
var routes = [][]string{
	{"frontend", "product-catalog"}, {"frontend", "recommendation", "product-catalog"}, {"frontend", "ad"},
	{"frontend", "cart", "valkey-cart"}, {"frontend", "checkout"}, {"frontend", "shipping", "quote"},
	{"frontend", "currency"}, {"image-provider"},
}

// operations are the server spans of each service (gRPC method or HTTP route).
var operations = map[string][]string{
	"frontend-proxy": {"ingress"}, "frontend": {"GET /api/products", "POST /api/checkout", "GET /api/cart"},
	"image-provider": {"GET /static/images/*"}, "ad": {"oteldemo.AdService/GetAds"},
	"cart": {"oteldemo.CartService/GetCart",
		"oteldemo.CartService/AddItem"}, "checkout": {"oteldemo.CheckoutService/PlaceOrder"},
	"currency": {
		"oteldemo.CurrencyService/Convert",
	}, "email": {"POST /send_order_confirmation"}, "payment": {"oteldemo.PaymentService/Charge"},
	"product-catalog": {"oteldemo.ProductCatalogService/GetProduct", "oteldemo.ProductCatalogService/ListProducts"},
	"recommendation": {
		"/oteldemo.RecommendationService/ListRecommendations"}, "shipping": {"oteldemo.ShippingService/GetQuote"},
	"quote": {"POST /getquote"}, "flagd": {"flagd.evaluation.v1.Service/ResolveBoolean"},
	"valkey-cart": {"HGET"}, "kafka": {"orders publish"}, "postgresql": {"INSERT otel.orders"},
	"accounting": {"orders process"}, "fraud-detection": {"orders process"}, "load-generator": {"GET"},
}

// scopes are the instrumentation scope and version each language's spans carry.
var scopes = map[string][2]string{
	"go":     {"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc", "0.59.0"},
	"python": {"opentelemetry.instrumentation.grpc", "0.58b0"},
	"nodejs": {"@opentelemetry/instrumentation-http", "0.57.2"},
	"java":   {"io.opentelemetry.grpc-1.6", "2.12.0-alpha"},
	"dotnet": {"OpenTelemetry.Instrumentation.AspNetCore", "1.11.0"},
	"cpp":    {"envoy", "1.32.3"},
	"ruby":   {"OpenTelemetry::Instrumentation::Sinatra", "0.25.0"},
	"php":    {"io.opentelemetry.contrib.php.slim", "1.1.0"},
	"rust":   {"opentelemetry-http", "0.27.0"},
}

var sdkVersions = map[string]string{"go": "1.34.0", "python": "1.37.0", "nodejs": "1.30.1", "java": "1.46.0",
	"dotnet": "1.11.1", "cpp": "1.18.0", "ruby": "1.7.0", "php": "1.2.0", "rust": "0.27.1"}

// buckets are the span metrics connector's default histogram bounds, in milliseconds.
var buckets = []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10000, 15000}

// series is one span-metrics time series of a service.
type series struct {
	kind, name, status string
}

// minuteCounts are a service's calls in one minute, by series.
type minuteCounts struct {
	calls map[series]int
	hist  map[series][]int // per bucket (the last is +Inf), not cumulative
}

// row is a trace or log record waiting to be written in time order.
type row struct {
	at     time.Time
	seq    int
	fields []string
}

// telemetry writes traces and logs by simulating requests in time order.
type telemetry struct {
	w              *world
	traces, logs   *snapshot.TSVWriter
	pending, plogs []row
	seq            int
}

func (w *world) requestInterval() time.Duration {
	if w.large {
		return 25 * time.Millisecond
	}
	return 3 * time.Second
}

func (tm *telemetry) run() error {
	w := tm.w
	step := w.requestInterval()
	nextConsume, nextStream := w.start, w.start.Add(-time.Duration(w.rng.IntN(500))*time.Second)
	forced := w.start.Add(time.Duration(5+w.rng.IntN(75)) * time.Second) // the first background error
	for t := w.start; t.Before(w.end); t = t.Add(step/2 + time.Duration(w.rng.Int64N(int64(step)))) {
		for ; nextStream.Before(t); nextStream = nextStream.Add(10 * time.Minute) {
			tm.eventStreams(nextStream)
		}
		for ; nextConsume.Before(t); nextConsume = nextConsume.Add(time.Duration(8+w.rng.IntN(8)) * time.Second) {
			tm.consume(nextConsume, !forced.IsZero() && forced.Before(nextConsume))
			if forced.Before(nextConsume) {
				forced = time.Time{}
			}
		}
		// Everything queued so far that starts before t is final: the streams and consumers
		// above start before t, and the request below and everything it calls start at t or
		// later.
		if err := tm.flush(t); err != nil {
			return err
		}
		path := routes[w.rng.IntN(len(routes))]
		tm.request(w.hex(32), t, path)
	}
	return tm.flush(w.end.Add(time.Hour))
}

// flush writes the records that start before t, in time order.
func (tm *telemetry) flush(t time.Time) error {
	for _, q := range []struct {
		rows *[]row
		out  *snapshot.TSVWriter
	}{{&tm.pending, tm.traces}, {&tm.plogs, tm.logs}} {
		rows := *q.rows
		slices.SortFunc(rows, func(a, b row) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq)) })
		n := 0
		for n < len(rows) && rows[n].at.Before(t) {
			if !rows[n].at.Before(tm.w.end) {
				n++
				continue
			}
			if err := q.out.Write(rows[n].fields...); err != nil {
				return err
			}
			n++
		}
		*q.rows = append(rows[:0], rows[n:]...)
	}
	return nil
}

// request is one user request from the load generator through the edge proxy.
func (tm *telemetry) request(trace string, t time.Time, path []string) {
	w := tm.w
	lg := w.byName["load-generator"]
	client := w.hex(16)
	d, failed, _ := tm.call(trace, client, "load-generator", "frontend-proxy", t.Add(time.Millisecond), path)
	status, msg := "Unset", ""
	if failed != "" {
		status = "Error"
	}
	tm.span(t, trace, client, "", "GET", "Client", lg,
		fmt.Sprintf("{'http.method': 'GET', 'http.status_code': '%d', 'http.url': 'http://frontend-proxy:8080/api/%s'}",
			httpCode(failed), path[len(path)-1]), d+2*time.Millisecond, status, msg)
}

func httpCode(failed string) int {
	switch {
	case failed == "":
		return 200
	case strings.Contains(failed, "timeout") || strings.Contains(failed, "deadline"):
		return 504
	}
	return 503
}

// effectsOn lists what the faults and the restarts do to a call from caller to callee at t,
// drawn now.
func (tm *telemetry) effectsOn(caller, callee string, t time.Time) (hurt []effect) {
	consider := func(e effect) {
		if e.service != callee || t.Before(e.from) || !e.until.IsZero() && !t.Before(e.until) ||
			(e.callers != nil && !slices.Contains(e.callers, caller)) {
			return
		}
		if e.mode == modeDown || e.rate >= 1 || tm.w.rng.Float64() < e.rate {
			hurt = append(hurt, e)
		}
	}
	for _, e := range tm.w.blips {
		consider(e)
	}
	for _, f := range tm.w.faults {
		for _, e := range f.effects {
			consider(e)
		}
	}
	return hurt
}

// deadline is how long a caller waits for an answer.
func deadline(caller string) time.Duration {
	switch caller {
	case "load-generator":
		return 30 * time.Second
	case "frontend-proxy":
		return 15 * time.Second
	}
	return 5 * time.Second
}

// call simulates caller -> callee at t along path (the services further down this request).
// It writes the callee's server span, its children and its logs, and returns the call's
// duration, the error the caller sees ("" when it succeeded) and the span that answered.
func (tm *telemetry) call(
	trace, parent, caller, callee string,
	t time.Time,
	path []string,
) (time.Duration, string, string) {
	w := tm.w
	s := w.byName[callee]
	addr := fmt.Sprintf("%s:%d", callee, s.port)
	for _, e := range tm.effectsOn(caller, callee, t) {
		switch e.mode {
		case modeDown:
			return time.Duration(1+w.rng.IntN(4)) * time.Millisecond, connectError(w.byName[caller].lang, addr), ""
		case modeCut:
			return deadline(caller), deadlineError(w.byName[caller].lang), ""
		case modeRefused:
			return time.Duration(2+w.rng.IntN(20)) * time.Millisecond, e.message, ""
		}
	}
	if !s.traced {
		// A store writes no span, but a slow one (stressed, warming up) slows its callers' calls.
		d := time.Duration(1+w.rng.IntN(3)) * time.Millisecond
		for _, e := range tm.effectsOn(caller, callee, t) {
			if e.mode == modeSlow {
				d += time.Duration(float64(e.delay) * w.rate(0.6, 1.6))
			}
		}
		return d, "", ""
	}
	pods := podsOf(s, t)
	if len(pods) == 0 {
		return time.Millisecond, connectError(w.byName[caller].lang, addr), ""
	}
	p := pods[w.rng.IntN(len(pods))]
	span := w.hex(16)
	op := pick(w, operations[callee])
	duration := time.Duration(1+w.rng.IntN(12))*time.Millisecond + time.Duration(w.rng.IntN(1000))*time.Microsecond
	var failure string
	children := slices.Clone(s.calls)
	if len(path) > 0 {
		children = slices.Clone(path[:1])
	} else if len(children) > 3 {
		children = children[:1+w.rng.IntN(len(children))]
	}
	if slices.Contains(s.calls, "flagd") && w.rng.IntN(4) == 0 {
		children = append(children, "flagd")
	}
	rest := path[min(1, len(path)):]
	for _, child := range children {
		if child == "kafka" && w.rng.IntN(2) == 0 {
			continue
		}
		client := w.hex(16)
		start := t.Add(duration)
		var next []string
		if len(path) > 0 && child == path[0] {
			next = rest
		}
		d, err, _ := tm.call(trace, client, callee, child, start.Add(300*time.Microsecond), next)
		status, msg := "Unset", ""
		if err != "" {
			status, msg = "Error", err
			if failure == "" && child != "flagd" && w.rng.IntN(10) > 0 {
				failure = ownError(callee, child, err)
			}
		}
		if child != "flagd" || err != "" || w.rng.IntN(3) == 0 {
			tm.span(start, trace, client, span, pick(w, operationsOrDefault(child)), "Client", s, clientAttributes(child, err),
				d+600*time.Microsecond, status, msg)
		}
		duration += d + time.Millisecond
	}
	for _, e := range tm.effectsOn(caller, callee, t) {
		switch e.mode {
		case modeSlow:
			duration += time.Duration(float64(e.delay) * tm.w.rate(0.6, 1.6))
		case modeFail:
			failure = e.message
		}
	}
	// The edge proxy answers 1-2% of requests with an error whatever happens downstream.
	edge := callee == "frontend-proxy" && w.rng.IntN(1000) < 15
	status, msg := "Unset", ""
	if failure != "" || edge {
		status, msg = "Error", failure
	}
	tm.count(callee, t, "SPAN_KIND_SERVER", op, duration, status != "Error")
	tm.span(t, trace, span, parent, op, "Server", s, serverAttributes(s, op, failure), duration, status, msg)
	seen := failure
	if edge && seen == "" {
		seen = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	}
	if duration > deadline(caller) {
		seen = deadlineError(w.byName[caller].lang)
	}
	if failure != "" {
		tm.log(t.Add(duration), trace, span, s, p, "ERROR", 17, logLine(s, op, failure))
	} else if w.rng.IntN(4) == 0 {
		tm.log(t.Add(duration), trace, span, s, p, "INFO", 9, fmt.Sprintf("%s handled in %dms", op, duration.Milliseconds()))
	}
	return min(duration, deadline(caller)), seen, span
}

func operationsOrDefault(service string) []string {
	if ops := operations[service]; len(ops) > 0 {
		return ops
	}
	return []string{service}
}

// eventStreams writes the flagd EventStream spans of the services that watch their flags:
// they hang for ten minutes and end DEADLINE_EXCEEDED, whatever else happens.
func (tm *telemetry) eventStreams(t time.Time) {
	w := tm.w
	for _, name := range []string{"recommendation", "cart", "ad", "payment", "product-catalog"} {
		s := w.byName[name]
		at := t.Add(time.Duration(w.rng.IntN(20000)) * time.Millisecond)
		pods := podsOf(s, at)
		if len(pods) == 0 {
			continue
		}
		tm.span(at, w.hex(32), w.hex(16), "", "/flagd.evaluation.v1.Service/EventStream", "Client", s,
			"{'rpc.grpc.status_code': '4', 'rpc.method': 'EventStream', 'rpc.service': 'flagd.evaluation.v1.Service', "+
				"'rpc.system': 'grpc'}", 600*time.Second+time.Duration(w.rng.IntN(5e6))*time.Nanosecond, "Error",
			streamDeadline(s.lang))
	}
}

// consume is the order consumers at work: accounting writes orders to postgresql and
// fraud-detection checks them; now and then a poll fails, fault or no fault.
func (tm *telemetry) consume(t time.Time, forceError bool) {
	w := tm.w
	for _, name := range []string{"accounting", "fraud-detection"} {
		s := w.byName[name]
		pods := podsOf(s, t)
		if len(pods) == 0 {
			continue
		}
		trace, span := w.hex(32), w.hex(16)
		d := time.Duration(2+w.rng.IntN(20)) * time.Millisecond
		var failure string
		if (name == "fraud-detection" && (forceError || w.rng.IntN(60) == 0)) ||
			(name == "accounting" && w.rng.IntN(150) == 0) {
			failure = pick(w, []string{
				"org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired before successfully committing " +
					"offsets {orders-0=OffsetAndMetadata{offset=18231, leaderEpoch=0, metadata=''}}",
				"Npgsql.NpgsqlException (0x80004005): Exception while reading from stream\n" +
					" ---> System.TimeoutException: Timeout during reading attempt",
			})
		}
		for _, e := range tm.effectsOn(name, "kafka", t) {
			if e.mode == modeSlow {
				d += e.delay
			}
		}
		// A fault in the consumer itself (a JVM's latency or exceptions) shows in its own spans.
		for _, e := range tm.effectsOn("kafka", name, t) {
			switch e.mode {
			case modeSlow:
				d += time.Duration(float64(e.delay) * w.rate(0.6, 1.6))
			case modeFail:
				failure = e.message
			}
		}
		status := "Unset"
		if failure != "" {
			status = "Error"
			tm.log(t.Add(d), trace, span, s, pods[0], "ERROR", 17, failure)
		}
		tm.count(name, t, "SPAN_KIND_CONSUMER", "orders process", d, failure == "")
		tm.span(t, trace, span, "", "orders process", "Consumer", s,
			"{'messaging.destination.name': 'orders', 'messaging.kafka.consumer.group': '"+name+"', 'messaging.operation': "+
				"'process', 'messaging.system': 'kafka'}", d, status, failure)
	}
}

// span queues a span record.
func (tm *telemetry) span(
	t time.Time,
	trace, span, parent, name, kind string,
	s *service,
	attrs string,
	d time.Duration,
	status, msg string,
) {
	w := tm.w
	pods := podsOf(s, t)
	if len(pods) == 0 {
		return
	}
	p := pods[int(t.UnixNano()/1000)%len(pods)]
	scope := scopes[s.lang]
	tm.seq++
	tm.pending = append(tm.pending, row{at: t, seq: tm.seq,
		fields: []string{stamp(t), trace, span, parent, "", name, kind, s.name, w.resource(s, p),
			scope[0], scope[1], attrs, fmt.Sprint(d.Nanoseconds()), status, msg, "[]", "[]", "[]", "[]", "[]", "[]", "[]"}})
}

// resource is a pod's OpenTelemetry resource, keys sorted as the recorder writes them.
func (w *world) resource(s *service, p pod) string {
	attrs := map[string]string{"host.name": podsOf(w.byName["otel-collector"], p.started.Add(time.Hour))[0].name,
		"k8s.deployment.name": s.name, "k8s.namespace.name": s.namespace, "k8s.node.name": p.node, "k8s.pod.ip": p.ip,
		"k8s.pod.name": p.name, "k8s.pod.start_time": ts(p.started), "k8s.pod.uid": p.uid, "os.type": "linux",
		"service.instance.id": p.uid, "service.name": s.name, "service.namespace": "opentelemetry-demo",
		"service.version":        "2.1.3",
		"telemetry.sdk.language": s.lang, "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.version": sdkVersions[s.lang]}
	if s.lang == "python" || s.lang == "java" || s.lang == "nodejs" {
		attrs["telemetry.auto.version"] = map[string]string{"python": "0.58b0", "java": "2.12.0", "nodejs": "0.57.2"}[s.lang]
	}
	return pyDict(attrs)
}

// pyDict writes a map as the recorder's Python dict repr, keys sorted.
func pyDict(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s': '%s'", k, strings.ReplaceAll(m[k], "'", `\'`))
	}
	b.WriteByte('}')
	return b.String()
}

func serverAttributes(s *service, op, failure string) string {
	if s.http {
		method, route, _ := strings.Cut(op, " ")
		code := "200"
		if failure != "" {
			code = "500"
		}
		return pyDict(map[string]string{"http.request.method": method, "http.response.status_code": code, "http.route": route,
			"server.port": fmt.Sprint(s.port)})
	}
	svc, method, _ := strings.Cut(strings.TrimPrefix(op, "/"), "/")
	code := "0"
	if failure != "" {
		code = "13"
	}
	return pyDict(
		map[string]string{"rpc.grpc.status_code": code, "rpc.method": method, "rpc.service": svc, "rpc.system": "grpc"})
}

func clientAttributes(callee, err string) string {
	attrs := map[string]string{"net.peer.name": callee, "rpc.system": "grpc"}
	if err != "" {
		attrs["rpc.grpc.status_code"] = "14"
	}
	return pyDict(attrs)
}

// deadlineError is how a caller written in lang reports a call that timed out.
func deadlineError(lang string) string {
	switch lang {
	case "go":
		return "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
	case "python":
		return streamDeadline("python")
	case "nodejs":
		return "4 DEADLINE_EXCEEDED: Deadline exceeded after 4.999s,LB pick: 0.001s,remote_addr=172.20.41.17:8080"
	case "dotnet":
		return `Status(StatusCode="DeadlineExceeded", Detail="")`
	case "cpp":
		return "upstream request timeout"
	}
	return "request timed out"
}

// streamDeadline is the flagd EventStream's end, as each language's gRPC client says it.
func streamDeadline(lang string) string {
	if lang == "python" {
		return "_MultiThreadedRendezvous: <_MultiThreadedRendezvous of RPC that terminated with:\n\t" +
			"status = StatusCode.DEADLINE_EXCEEDED\n\tdetails = \"Deadline Exceeded\"\n\t" +
			"debug_error_string = \"UNKNOWN:Error received from peer  {grpc_status:4, grpc_message:\"Deadline Exceeded\"}\"\n>"
	}
	return deadlineError(lang)
}

// ownError is what a service writes when a call to child failed: its own words, naming at
// most what it was doing, not the child's text.
func ownError(service, child, childErr string) string {
	switch service {
	case "frontend":
		return "Error: 13 INTERNAL: failed to fetch " + strings.ReplaceAll(child, "-", " ") + " data"
	case "frontend-proxy":
		return ""
	case "checkout":
		return "failed to prepare order: " + map[string]string{"cart": "cart failure", "shipping": "shipping quote failure",
			"product-catalog": "failed to get product",
			"currency":        "failed to convert price", "payment": "failed to charge card", "email": "failed to send order " +
				"confirmation"}[child]
	case "recommendation":
		return "Exception calling application: failed to retrieve product list"
	case "shipping":
		return "failed to get quote: error sending request for url (http://quote:8090/getquote)"
	case "cart":
		return "Can't access cart storage. System.ApplicationException: Wasn't able to connect to redis"
	}
	first, _, _ := strings.Cut(childErr, "\n")
	return first
}

// logLine is the log body a service writes for a failed request.
func logLine(s *service, op, failure string) string {
	switch s.lang {
	case "go":
		return fmt.Sprintf(`{"level":"error","msg":%q,"method":%q}`, failure, op)
	case "nodejs":
		return fmt.Sprintf("%s failed: %s", op, failure)
	case "python":
		return "Exception on " + op + "\nTraceback (most recent call last):\n" +
			"  File \"/usr/local/lib/python3.12/site-packages/grpc/_server.py\", line 555, in _call_behavior\n" +
			"    response_or_iterator = behavior(argument, context)\n" + failure
	}
	return failure
}

func (tm *telemetry) log(t time.Time, trace, span string, s *service, p pod, severity string, number int, body string) {
	tm.seq++
	tm.plogs = append(tm.plogs, row{at: t, seq: tm.seq,
		fields: []string{stamp(t), t.Format("2006-01-02 15:04:05"), trace, span, "1", severity, fmt.Sprint(number), s.name,
			body, "", tm.w.resource(s, p), "", scopes[s.lang][0], "", "{}", "{}", ""}})
}

// count adds a call to the service metrics.
func (tm *telemetry) count(service string, t time.Time, kind, name string, d time.Duration, ok bool) {
	m := tm.w.counts[service]
	if m == nil {
		m = map[int64]*minuteCounts{}
		tm.w.counts[service] = m
	}
	minute := t.Unix() / 60
	c := m[minute]
	if c == nil {
		c = &minuteCounts{calls: map[series]int{}, hist: map[series][]int{}}
		m[minute] = c
	}
	status := "STATUS_CODE_UNSET"
	if !ok {
		status = "STATUS_CODE_ERROR"
	}
	k := series{kind, name, status}
	c.calls[k]++
	if c.hist[k] == nil {
		c.hist[k] = make([]int, len(buckets)+1)
	}
	ms := float64(d) / float64(time.Millisecond)
	i := sort.SearchFloat64s(buckets, ms)
	c.hist[k][i]++
}

// stamp writes a timestamp as the recorder does: UTC, nanoseconds, no zone.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000000") }

// metricStamp writes a metrics timestamp (milliseconds).
func metricStamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }
