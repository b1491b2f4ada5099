# builtin/baseline's investigation: a fault-agnostic SRE heuristic over every source of a
# snapshot (alerts, events, object dumps, logs, traces, metrics), standard library only.
# It finds the services whose behaviour changed (in traces: errors, latency, calls that never
# arrive; in logs: error lines; in metrics: failing calls, pods that restart, memory or CPU
# that jumps), keeps the deepest of them in the call graph, lists what changed in the cluster
# during the incident (objects created, edited or in a disruptive state, warnings), ranks
# each change by whether it touches a failing service, the one that failed first and one that
# more than one source shows failing, and prints the ranking as one JSON object.
import csv, glob, hashlib, json, os, re, sys
from datetime import datetime
from collections import defaultdict

csv.field_size_limit(sys.maxsize)
POD = re.compile(r"^(.+?)-(?:[bcdfghjklmnpqrstvwxz2456789]{6,10}-)?[bcdfghjklmnpqrstvwxz2456789]{5}$")
STS = re.compile(r"^(.+)-[0-9]+$")
VOLATILE_META = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")


def rows(path):
    """Records of a snapshot TSV (pandas to_csv with tabs); broken records are skipped."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                if None in row:
                    continue
                yield row
    except (OSError, csv.Error):
        return


def seconds(ts):
    try:
        return datetime.fromisoformat(ts[:19]).timestamp()
    except ValueError:
        return 0


def minute(ts):
    return (ts or "")[:16]


def workload(name):
    m = POD.match(name) or STS.match(name)
    return m.group(1) if m else name


def entity(ns, kind, name):
    return "%s/%s/%s" % (ns, kind, name) if ns else "%s/%s" % (kind, name)


def words(text):
    """Lower-case words of a text, camelCase split: cartFailure -> cart, failure."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return set(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", text))


def mentions(text, service):
    parts = service.split("-")
    ws = words(text)
    return all(p in ws for p in parts)


# ---- traces: topology, errors and latency per service and minute
span_service, server_of_name = {}, {}
errors = defaultdict(lambda: defaultdict(int))  # service -> minute -> own server errors
calls = defaultdict(lambda: defaultdict(int))
slow = defaultdict(lambda: defaultdict(list))  # service -> minute -> durations (ms)
unanswered = defaultdict(lambda: defaultdict(int))  # callee -> minute -> client errors without a server span
edges = set()
client_spans = []
minutes = set()
for r in rows("otel_traces_raw.tsv"):
    svc, kind, m = r.get("ServiceName", ""), r.get("SpanKind", ""), minute(r.get("Timestamp"))
    span_service[r.get("SpanId", "")] = (svc, kind)
    minutes.add(m)
    try:
        dur = int(r.get("Duration") or 0) / 1e6
    except ValueError:
        dur = 0
    err = r.get("StatusCode") == "Error"
    if kind in ("Server", "Consumer"):
        server_of_name.setdefault(r.get("SpanName", ""), svc)
        calls[svc][m] += 1
        if dur < 300000:  # a stream held open for minutes is not a request
            slow[svc][m].append(dur)
        if err:
            errors[svc][m] += 1
        parent = span_service.get(r.get("ParentSpanId", ""))
        if parent and parent[0] != svc:
            edges.add((parent[0], svc))
    elif kind == "Client":
        client_spans.append((svc, r.get("SpanName", ""), m, err, dur, r.get("SpanId", ""), r.get("SpanAttributes", "")))
answered = set()
for r in rows("otel_traces_raw.tsv") if len(client_spans) < 2000000 else []:
    if r.get("SpanKind") in ("Server", "Consumer"):
        answered.add(r.get("ParentSpanId", ""))
for caller, name, m, err, dur, sid, attrs in client_spans:
    callee = server_of_name.get(name)
    if not callee:
        peer = re.search(r"'(?:net\.peer\.name|server\.address)': '([^']+)'", attrs)
        callee = peer.group(1) if peer else None
    if callee and callee != caller:
        edges.add((caller, callee))
        if err and sid not in answered and dur < 300000:
            unanswered[callee][m] += 1


# ---- logs: error lines per service and minute (the severity, or the words of a stack trace
# when the logger wrote none)
ERROR_WORDS = re.compile(r"\b(?:Exception|Traceback|panic|FATAL|ERROR|Error:)|\bfailed\b|\berror\b")
log_errors = defaultdict(lambda: defaultdict(int))  # service -> minute -> error lines
for r in rows("otel_logs_raw.tsv"):
    m = minute(r.get("Timestamp"))
    svc = r.get("ServiceName", "")
    if not svc:
        pod = re.search(r"'k8s\.pod\.name': '([^']+)'", r.get("ResourceAttributes", ""))
        svc = workload(pod.group(1)) if pod else ""
    if not svc or not m:
        continue
    minutes.add(m)
    text, number = (r.get("SeverityText") or "").upper(), r.get("SeverityNumber") or "0"
    try:
        number = int(number)
    except ValueError:
        number = 0
    if number >= 17 or text in ("ERROR", "FATAL", "CRITICAL", "EMERGENCY", "ALERT") or \
            not text and not number and ERROR_WORDS.search((r.get("Body") or "")[:400]):
        log_errors[svc][m] += 1


# ---- metrics: per workload and minute, failing calls (service metrics), restarts, memory
# and CPU (pod metrics); counters become per-scrape increases
def metric_rows(path):
    for r in rows(path):
        try:
            yield r, float(r.get("value") or "nan")
        except ValueError:
            continue


metric_errors = defaultdict(lambda: defaultdict(float))  # service -> minute -> failed calls
metric_calls = defaultdict(lambda: defaultdict(float))
restarts = defaultdict(dict)  # workload -> minute -> restarts its pods made
memory = defaultdict(lambda: defaultdict(float))  # workload -> minute -> largest working set of its pods
cpu = defaultdict(lambda: defaultdict(float))  # workload -> minute -> most cores one of its pods burns
restart_series = {}  # pod -> [(minute, restarts)]
for path in sorted(glob.glob("metrics/service_*_raw.tsv")):
    last, first = {}, None
    for r, v in metric_rows(path):
        m = minute(r.get("timestamp"))
        first = first or m
        if r.get("metric_name") != "traces_span_metrics_calls_total" or v != v:
            continue
        tags = r.get("tags", "")
        if "SPAN_KIND_SERVER" not in tags and "SPAN_KIND_CONSUMER" not in tags:
            continue  # a service's own calls, not the ones it makes
        svc = r.get("service_name") or os.path.basename(path)[8:-8]
        key = (svc, tags)
        # A counter already there at the first scrape counts from then; one born later
        # (the first failed call makes its series) counts from zero.
        added = (v - last[key] if v >= last[key] else v) if key in last else (v if m > first else 0)
        metric_calls[svc][m] += added
        if "ERROR" in (r.get("status_code") or tags):
            metric_errors[svc][m] += added
        last[key] = v
        minutes.add(m)
for path in sorted(glob.glob("metrics/pod_*_raw.tsv")):
    last = {}
    for r, v in metric_rows(path):
        name, m = r.get("metric_name", ""), minute(r.get("timestamp"))
        pod = r.get("pod_name") or os.path.basename(path)[4:-8]
        w = workload(pod)
        if v != v or not m:
            continue
        minutes.add(m)
        if "restarts" in name:
            restart_series.setdefault(pod, []).append((m, v))
        elif "memory_working_set" in name:
            memory[w][m] = max(memory[w][m], v)
        elif "cpu_usage_seconds" in name:
            at = seconds(r.get("timestamp", ""))
            if name in last and at > last[name + "@"]:
                cpu[w][m] = max(cpu[w][m], max(0.0, v - last[name]) / (at - last[name + "@"]))
            last[name + "@"] = at
        last[name] = v
for pod, series in restart_series.items():
    # Restarts seen to happen: a pod that comes with some (kafka waiting for its peers) is no news.
    before = series[0][1]
    for m, v in series:
        if v > before:
            restarts[workload(pod)][m] = restarts[workload(pod)].get(m, 0) + v - before
        before = max(before, v)
order = sorted(minutes)


def onset(counts, base):
    """First minute where a per-minute count rises above its usual level, or None."""
    if not order:
        return None
    head = order[: max(1, len(order) // 5)]
    usual = max([counts.get(m, 0) / max(1, base.get(m, 1)) for m in head] + [0])
    for m in order:
        if counts.get(m, 0) / max(1, base.get(m, 1)) > usual * 1.5 + 0.05 and counts.get(m, 0) >= 2:
            return m
    return None


def latency_onset(series):
    if not order or not series:
        return None
    avg = {m: sum(v) / len(v) for m, v in series.items() if v}
    head = [avg[m] for m in order[: max(2, len(order) // 5)] if m in avg]
    if not head:
        return None
    usual = sorted(head)[len(head) // 2]
    late = [m for m in order if m in avg and avg[m] > usual * 3 + 50]
    return late[0] if len(late) >= 2 else None


def rise_onset(counts):
    """First minute from which a count (error lines) stays well above its usual level: a
    service that logs errors now and then from the start has no onset."""
    if not order or not counts:
        return None
    head = order[: max(2, len(order) // 5)]
    usual = sum(counts.get(m, 0) for m in head) / len(head)
    for i, m in enumerate(order):
        if m in head or counts.get(m, 0) < max(2, usual * 2 + 1):
            continue
        rest = [counts.get(k, 0) for k in order[i:]]
        if sum(rest) / len(rest) >= usual * 2 + 0.5:
            return m
    return None


def level_onset(series, factor, floor):
    """First minute where a level (memory, CPU) stays above factor times its usual value."""
    if not order or not series:
        return None
    head = [series[m] for m in order[: max(2, len(order) // 5)] if m in series]
    if not head:
        return None
    usual = sorted(head)[len(head) // 2]
    high = [m for m in order if m in series and series[m] > usual * factor + floor]
    return high[0] if len(high) >= 2 else None


symptoms = {}  # service -> (onset minute, why)
sources = defaultdict(set)  # service -> the sources that show it failing (traces, logs, metrics)
for svc in sorted(set(list(calls) + list(unanswered) + list(log_errors) + list(metric_calls) + list(restarts) + list(memory) + list(cpu))):
    for when, why, source in ((onset(errors[svc], calls[svc]), "its requests fail", "traces"),
                              (onset(unanswered[svc], {}), "calls to it get no answer", "traces"),
                              (latency_onset(slow[svc]), "its requests slow down", "traces"),
                              (rise_onset(log_errors[svc]), "its logs turn to errors", "logs"),
                              # the same calls as the traces, coarser: for services without spans
                              (None if calls.get(svc) else onset(metric_errors[svc], metric_calls[svc]), "its metrics count failing calls", "metrics"),
                              (min(restarts[svc]) if restarts.get(svc) else None, "its pods restart", "metrics"),
                              (level_onset(memory.get(svc), 1.5, 20e6), "its memory climbs", "metrics"),
                              (level_onset(cpu.get(svc), 3, 0.05), "its CPU jumps", "metrics")):
        if not when:
            continue
        sources[svc].add(source)
        if svc not in symptoms or when < symptoms[svc][0]:
            symptoms[svc] = (when, why)

# ---- alerts: services and pods that began to alert during the window
alert_first, alerted = None, {}
for path in sorted(glob.glob("alerts/*.json") + glob.glob("alerts_*.json")):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        continue
    if isinstance(doc, dict):
        doc = (doc.get("data") or {}).get("alerts") or doc.get("alerts") or [doc]
    stamp = re.sub(r"[^0-9]", "", os.path.basename(path))[:12]
    alert_first = alert_first or stamp
    for a in doc if isinstance(doc, list) else []:
        labels = a.get("labels") or {} if isinstance(a, dict) else {}
        active = re.sub(r"[^0-9]", "", a.get("activeAt") or "")[:12]
        if not labels or active <= (alert_first or ""):
            continue  # firing before the recording began: background
        ns = labels.get("namespace", "")
        for key, kind in (("service_name", "Service"), ("deployment", "Deployment"), ("pod", "Pod")):
            if labels.get(key):
                alerted.setdefault(entity(ns, kind, labels[key]), labels.get("alertname", ""))
alert_services = set(e.split("/")[-1] for e in alerted if "/Service/" in e)
alert_workloads = set(workload(e.split("/")[-1]) for e in alerted if "/Service/" not in e)

# ---- the suspects: services with symptoms none of whose callees has earlier ones
def callees(s):
    return [b for a, b in edges if a == s]


suspects = {}
for svc, (when, why) in symptoms.items():
    if not any(c in symptoms and symptoms[c][0] <= when for c in callees(svc)):
        suspects[svc] = (when, why)
if not suspects:
    for svc in sorted(alert_services | alert_workloads):
        suspects[svc] = ("", "it alerts")
# The first to fail: of several suspects, the one whose trouble shows first in any source
# (logs often show it before the calls do), when one does.
first_symptom = min([w for w, _ in suspects.values() if w] or [""])
first_failing = [s for s, (w, _) in suspects.items() if w and w == first_symptom]
first_failing = set(first_failing) if len(first_failing) == 1 and len(suspects) > 1 else set()

# ---- events: warnings and chaos activity per object
warnings = defaultdict(int)
event_first = {}
for r in rows("k8s_events_raw.tsv"):
    try:
        ev = json.loads(r.get("Body") or "null")
    except ValueError:
        continue
    ev = ev.get("object") if isinstance(ev, dict) and isinstance(ev.get("object"), dict) else ev
    if not isinstance(ev, dict):
        continue
    about = ev.get("regarding") or ev.get("involvedObject") or {}
    key = entity(about.get("namespace", ""), about.get("kind", ""), about.get("name", ""))
    first = ev.get("deprecatedFirstTimestamp") or ev.get("firstTimestamp") or r.get("Timestamp", "")
    event_first.setdefault(key, minute(first.replace("T", " ")))
    if ev.get("type") == "Warning":
        warnings[key] += 1

# ---- objects: what changed, what was created, what is disruptive
def normal(o):
    o = dict(o)
    o.pop("status", None)
    meta = dict(o.get("metadata") or {})
    for k in VOLATILE_META:
        meta.pop(k, None)
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if "last-updated" not in k and "restartedAt" not in k}
    meta["annotations"] = ann
    o["metadata"] = meta
    spec = o.get("spec")
    if isinstance(spec, dict) and "renewTime" in spec:
        o["spec"] = {k: v for k, v in spec.items() if k not in ("renewTime", "acquireTime")}
    tmpl = (o.get("spec") or {}).get("template") if isinstance(o.get("spec"), dict) else None
    if isinstance(tmpl, dict):
        t = json.loads(json.dumps(tmpl))
        ((t.get("metadata") or {}).get("annotations") or {}).pop("kubectl.kubernetes.io/restartedAt", None)
        o["spec"] = dict(o["spec"], template=t, replicas=None)
    return hashlib.sha1(json.dumps(o, sort_keys=True, default=str).encode()).hexdigest()


dumps, dump_start = 0, None
seen_in = defaultdict(set)
versions = defaultdict(list)  # key -> [(dump, hash)]
info = {}
changed_text = defaultdict(str)
first_data = {}
for r in rows("k8s_objects_raw.tsv"):
    ts = r.get("Timestamp", "")
    at = seconds(ts)
    if dump_start is None or at - dump_start > 60:
        dumps, dump_start = dumps + 1, at
    try:
        o = json.loads(r.get("Body") or "null")
    except ValueError:
        continue
    if not isinstance(o, dict) or not o.get("kind"):
        continue
    meta = o.get("metadata") or {}
    key = entity(meta.get("namespace", ""), o["kind"], meta.get("name", ""))
    seen_in[key].add(dumps)
    h = normal(o)
    if not versions[key] or versions[key][-1][1] != h:
        versions[key].append((dumps, h))
        if o["kind"] == "ConfigMap":
            data = json.dumps(o.get("data"), sort_keys=True)
            if key in first_data and first_data[key] != data:
                old, lines = set(first_data[key].split("\\n")), data.split("\\n")
                for i, line in enumerate(lines):
                    if line not in old:  # the changed line and the keys above it
                        changed_text[key] += " " + " ".join(lines[max(0, i - 8): i + 1])
            first_data.setdefault(key, data)
    spec = o.get("spec") if isinstance(o.get("spec"), dict) else {}
    status = o.get("status") if isinstance(o.get("status"), dict) else {}
    info[key] = (o, minute(ts), spec, status, meta)


def targets(key):
    """Services an object acts on, as far as its spec says."""
    o, _, spec, status, meta = info[key]
    kind, text = o["kind"], json.dumps(spec)
    out = set()
    for m in re.finditer(r'"(?:app\.kubernetes\.io/name|app\.kubernetes\.io/component|opentelemetry\.io/name|app)": "([^"]+)"', text):
        out.add(m.group(1))
    ref = spec.get("scaleTargetRef") or {}
    if ref.get("name"):
        out.add(ref["name"])
    for rec in ((status.get("experiment") or {}).get("containerRecords") or []):
        out.add(workload(str(rec.get("id", "")).split("/")[-1]))
    if kind == "ConfigMap":
        out |= set(s for s in symptoms if mentions(changed_text.get(key, ""), s))
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        out.add(meta.get("name", ""))
    return out


def disruptive(key):
    o, _, spec, status, _ = info[key]
    kind = o["kind"]
    if "chaos-mesh.org" in o.get("apiVersion", ""):
        phase = (status.get("experiment") or {}).get("desiredPhase")
        return phase != "Stop" and kind != "Schedule" or kind == "Schedule" and bool(status.get("active"))
    if kind == "NetworkPolicy":
        return not spec.get("ingress") and "Ingress" in (spec.get("policyTypes") or [])
    if kind == "ResourceQuota":
        hard, used = status.get("hard") or {}, status.get("used") or {}
        return any(used.get(k) == v for k, v in hard.items())
    if kind == "HorizontalPodAutoscaler":
        return spec.get("maxReplicas", 2) <= spec.get("minReplicas", 1)
    return False


candidates = {}


def add(key, points, why):
    c = candidates.setdefault(key, {"entity": key, "score": 0.0, "why": []})
    c["score"] += points
    c["why"].append(why)


bad = set(suspects) | set(symptoms)
for key, vs in versions.items():
    if key not in info:
        continue
    o, when, spec, status, meta = info[key]
    kind = o["kind"]
    if kind in ("Pod", "ReplicaSet", "Endpoints", "Event", "Lease", "Node", "EndpointSlice"):
        continue
    created = min(seen_in[key]) > 1 and dumps > 1
    edits = len(vs) - 1
    churn = dumps > 2 and edits >= dumps - 2
    hit = targets(key)
    if churn:
        continue
    evidence = 0
    if created:
        evidence += 2
        add(key, 2, "created during the incident")
    if edits:
        evidence += 2
        add(key, 2, "edited during the incident")
    if disruptive(key):
        evidence += 2
        add(key, 2, "in a disruptive state")
    if not evidence:
        continue
    if hit & set(suspects):
        add(key, 4, "acts on %s, where the failure starts" % ", ".join(sorted(hit & set(suspects))))
    elif hit & bad:
        add(key, 2, "acts on %s, which misbehaves" % ", ".join(sorted(hit & bad)))
    elif kind == "ResourceQuota" or kind == "Namespace":
        add(key, 1, "limits the whole namespace")
    if hit & first_failing:
        add(key, 1, "%s failed first (%s)" % (", ".join(sorted(hit & first_failing)), first_symptom))
    seen_by = sorted(set().union(*[sources[s] for s in hit & set(suspects)])) if hit & set(suspects) else []
    if len(seen_by) > 1:
        add(key, 1, "that failure shows in %s" % " and ".join(seen_by))
    if kind == "Schedule":
        candidates[key]["score"] -= 0.5  # the experiment it spawned is the more direct cause

# workloads of the suspects: pods that cannot run, warnings about them
for key, (o, when, spec, status, meta) in info.items():
    if o["kind"] != "Pod":
        continue
    svc = workload(meta.get("name", ""))
    if svc not in bad:
        continue
    cs = (status.get("containerStatuses") or [{}])[0]
    state = (cs.get("state") or {}).get("waiting") or {}
    reason = state.get("reason") or ("Unschedulable" if status.get("phase") == "Pending" else "")
    reason = reason or ("restarting" if restarts.get(svc) else "")
    if reason or warnings.get(key):
        # The failing pod names its workload too (a pod stands for its Deployment).
        target = entity(meta.get("namespace", ""), "Pod", meta.get("name", ""))
        add(target, 3 if svc in suspects else 1, "its pods are %s" % (reason or "warned about"))
        if len(versions.get(entity(meta.get("namespace", ""), "Deployment", svc), [])) > 1:
            add(target, 2, "its pod template changed before the pods failed")

if not candidates:
    for svc, (when, why) in sorted(suspects.items()):
        add(entity("otel-demo", "Service", svc), 1, why)

ranked = sorted(candidates.values(), key=lambda c: (-c["score"], c["entity"]))
print(json.dumps({"candidates": ranked[:10], "suspects": {s: w for s, (_, w) in sorted(suspects.items())},
                  "symptoms": {s: {"since": w, "why": why, "sources": sorted(sources[s])} for s, (w, why) in sorted(symptoms.items())},
                  "dumps": dumps}))
