package synth

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// flagSpec is one flag of the demo's flagd-config and what turning it on does.
type flagSpec struct {
	name, description string
	victim            string
	apply             func(w *world, f *fault)
}

// flags are the feature flags of the OpenTelemetry demo 2.1 (demo.flagd.json), in its order.
var flags = []flagSpec{
	{name: "productCatalogFailure", description: "Fail product catalog service on a specific product",
		victim: "product-catalog", apply: failing(0.08, 0.2,
			"failed to get product: rpc error: code = Internal desc = product catalog unavailable for id OLJCESPC7Z")},
	{name: "recommendationCacheFailure", description: "Fail recommendation service cache", victim: "recommendation",
		apply: slowing(0.7, 400*time.Millisecond, 0, 900e6)},
	{name: "adManualGc", description: "Triggers full manual garbage collections in the ad service", victim: "ad",
		apply: slowing(0.3, 1800*time.Millisecond, 0, 0)},
	{name: "adHighCpu", description: "Triggers high cpu load in the ad service", victim: "ad",
		apply: slowing(0.8, 700*time.Millisecond, 0.98, 0)},
	{name: "adFailure", description: "Fail ad service", victim: "ad",
		apply: failing(0.08, 0.15,
			"io.grpc.StatusRuntimeException: UNAVAILABLE\n\tat io.grpc.Status.asRuntimeException(Status.java:532)\n\t"+
				"at oteldemo.AdService$AdServiceImpl.getAds(AdService.java:163)")},
	{name: "kafkaQueueProblems",
		description: "Overloads Kafka queue while simultaneously introducing a consumer side delay leading to a lag spike",
		victim:      "kafka", apply: slowing(0.9, 900*time.Millisecond, 0.9, 1.4e9)},
	{name: "cartFailure", description: "Fail cart service", victim: "cart",
		apply: failing(0.15, 0.35,
			"Can't access cart storage. System.ApplicationException: Wasn't able to connect to redis \n"+
				"   at cart.cartstore.ValkeyCartStore.EnsureRedisConnected() in /app/src/cartstore/ValkeyCartStore.cs:line 98")},
	{name: "paymentFailure", description: "Fail payment service charge requests n%", victim: "payment",
		apply: failing(0.2, 0.6, "Payment request failed. Invalid token. app.loyalty.level=gold")},
	{name: "paymentUnreachable", description: "Payment service is unavailable", victim: "payment",
		apply: func(w *world, f *fault) {
			f.effects = append(f.effects,
				effect{service: "payment", mode: modeRefused, from: f.at, rate: 1, callers: []string{"checkout"},
					message: `dial tcp: lookup badAddress on 172.20.0.10:53: no such host`})
		}},
	{name: "loadGeneratorFloodHomepage", description: "Flood the frontend with a large amount of requests.",
		victim: "frontend", apply: slowing(0.9, 1200*time.Millisecond, 0.95, 0)},
	{name: "imageSlowLoad", description: "slow loading images in the frontend", victim: "image-provider",
		apply: slowing(1, 5*time.Second, 0, 0)},
	{name: "emailMemoryLeak", description: "Memory leak in the email service.", victim: "email",
		apply: slowing(0.4, 600*time.Millisecond, 0, 1.2e9)},
	{name: "failedReadinessProbe", description: "Readiness probe failure for cart service", victim: "cart",
		apply: func(w *world, f *fault) {
			f.effects = append(f.effects, effect{service: "cart", mode: modeDown, from: f.at.Add(30 * time.Second)})
			f.troubles = append(f.troubles, trouble{service: "cart", from: f.at.Add(30 * time.Second), reason: "NotReady"})
		}},
}

func flagByName(name string) flagSpec {
	for _, f := range flags {
		if f.name == name {
			return f
		}
	}
	panic("no flag " + name)
}

// failing is a flag that makes the victim answer a share of its calls with message.
func failing(lo, hi float64, message string) func(*world, *fault) {
	return func(w *world, f *fault) {
		f.effects = append(f.effects,
			effect{service: f.victim, mode: modeFail, from: f.at, rate: w.rate(lo, hi), message: message})
	}
}

// slowing is a flag that slows a share of the victim's calls by about delay and, when cpu
// or memory is not zero, has its pods burn that many cores or hold that many bytes.
func slowing(share float64, delay time.Duration, cpu, memory float64) func(*world, *fault) {
	return func(w *world, f *fault) {
		w.slowdown(f, f.victim, share, delay)
		if cpu != 0 || memory != 0 {
			f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, cpu: cpu, memory: memory})
		}
	}
}

// slowdown makes a share of the calls to service slower by about delay.
func (w *world) slowdown(f *fault, service string, share float64, delay time.Duration) {
	f.effects = append(f.effects, effect{service: service, mode: modeSlow, from: f.at, rate: share,
		delay: time.Duration(float64(delay) * w.rate(0.8, 1.3))})
}

func (w *world) injectFlag(f *fault, fl flagSpec) {
	f.victim, f.flag = fl.victim, &fl
	f.rootKind, f.rootNS, f.rootName = "ConfigMap", appNamespace, "flagd-config"
	id := pick(w, []string{"flagd-config", "flagd-config-1"})
	g := gtGroup{id: id, kind: "ConfigMap", namespace: appNamespace, root: true}
	if w.rng.IntN(2) == 0 {
		g.name = "flagd-config"
	} else {
		g.filter = []string{`flagd-config\b`}
	}
	f.groups = []gtGroup{g}
	f.condition = fl.name + " feature flag set"
	f.mechanism = "custom(flagd)"
	f.changed = fmt.Sprintf("%q: %s -> %s", fl.name, `"defaultVariant": "off"`, `"defaultVariant": "on"`)
	f.actions = []string{"Disable " + fl.name + " flag", "Restart " + fl.victim + " service"}
	fl.apply(w, f)
	// flagd reloads the file and the services' EventStreams see the change.
	f.events = append(f.events,
		event{at: f.at.Add(time.Duration(40+w.rng.IntN(40)) * time.Second), kind: "Pod", namespace: appNamespace,
			name: podsOf(w.byName["flagd"], f.at)[0].name, typ: "Normal", reason: "Synced",
			note: "ConfigMap otel-demo/flagd-config was updated, projected volume refreshed", reporter: "kubelet"})
}

// flagdConfig is the feature-flag ConfigMap as the demo writes it (pretty JSON, two-space
// indent); the flag faults switch one flag on.
func (w *world) flagdConfig(t time.Time) obj {
	type flagJSON struct {
		Description    string         `json:"description"`
		State          string         `json:"state"`
		Variants       map[string]any `json:"variants"`
		DefaultVariant string         `json:"defaultVariant"`
	}
	body := func(t time.Time) string {
		var b strings.Builder
		b.WriteString("{\n  \"$schema\": \"https://flagd.dev/schema/v0/flags.json\",\n  \"flags\": {\n")
		for i, fl := range flags {
			def := "off"
			for _, f := range w.faults {
				if f.flag != nil && f.flag.name == fl.name && !t.Before(f.at) {
					def = "on"
				}
			}
			v, _ := json.MarshalIndent(flagJSON{Description: fl.description, State: "ENABLED",
				Variants: map[string]any{"on": true, "off": false}, DefaultVariant: def}, "    ", "  ")
			fmt.Fprintf(&b, "    %q: %s", fl.name, v)
			if i < len(flags)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  }\n}\n")
		return b.String()
	}
	return obj{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": w.meta("ConfigMap", "flagd-config", appNamespace, w.start.Add(-72*time.Hour), obj{
			"labels":      obj{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "opentelemetry-demo"},
			"annotations": obj{"meta.helm.sh/release-name": "otel-demo", "meta.helm.sh/release-namespace": appNamespace}}),
		"data": obj{"demo.flagd.json": body(t)},
	}
}
