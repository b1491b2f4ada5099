# The baseline's survey: reads the snapshot's object dumps and events (pandas TSV, read with
# the csv module) and prints the facts the baseline's rules decide on, as one JSON object.
import csv, json, re, sys
from collections import defaultdict

csv.field_size_limit(sys.maxsize)
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]"
POD = re.compile(r"^(.+)-%s{6,10}-%s{5}$" % (SUFFIX, SUFFIX))


def rows(path):
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                try:
                    yield row.get("Timestamp", ""), json.loads(row.get("Body") or "null")
                except ValueError:
                    continue
    except OSError:
        return


def entity(ns, kind, name):
    return "%s/%s/%s" % (ns or "cluster", kind, name)


def workload(ns, pod):
    m = POD.match(pod)
    return entity(ns, "Deployment", m.group(1)) if m else entity(ns, "Pod", pod)


facts = defaultdict(set)
first, last = {}, {}
for ts, obj in rows("k8s_objects_raw.tsv"):
    if not isinstance(obj, dict):
        continue
    if "object" in obj and isinstance(obj["object"], dict) and "kind" in obj["object"]:
        obj = obj["object"]
    kind, meta = obj.get("kind", ""), obj.get("metadata") or {}
    ns, name = meta.get("namespace", ""), meta.get("name", "")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    key = entity(ns, kind, name)
    if kind == "ConfigMap":
        state = json.dumps(obj.get("data"), sort_keys=True)
    elif kind in ("Deployment", "StatefulSet", "DaemonSet"):
        state = json.dumps(spec.get("template"), sort_keys=True)
    else:
        state = None
    if state is not None:
        first.setdefault(key, state)
        last[key] = state
    if obj.get("apiVersion", "").startswith("chaos-mesh.org") and kind != "Schedule":
        facts["chaos"].add(key)
    if kind == "NetworkPolicy" and "Ingress" in (spec.get("policyTypes") or ["Ingress"]) and not spec.get("ingress"):
        facts["netpol_deny"].add(key)
    if kind == "HorizontalPodAutoscaler" and (spec.get("maxReplicas") or 99) <= 1:
        facts["hpa_capped"].add(key)
    if kind == "ResourceQuota":
        hard, used = status.get("hard") or {}, status.get("used") or {}
        if any(used.get(r) == v for r, v in hard.items()):
            facts["quota_full"].add(key)
    if kind == "Pod":
        for cs in status.get("containerStatuses") or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            terminated = (cs.get("lastState") or {}).get("terminated") or {}
            if waiting.get("reason") in ("ImagePullBackOff", "ErrImagePull", "InvalidImageName"):
                facts["image_pull"].add(workload(ns, name))
            if terminated.get("reason") == "OOMKilled":
                facts["oom"].add(workload(ns, name))

for key in first:
    if first[key] != last[key]:
        facts["configmap_changed" if "/ConfigMap/" in key else "template_changed"].add(key)

for ts, ev in rows("k8s_events_raw.tsv"):
    if not isinstance(ev, dict):
        continue
    if isinstance(ev.get("object"), dict):
        ev = ev["object"]
    ref = ev.get("regarding") or ev.get("involvedObject") or {}
    reason, note = ev.get("reason", ""), ev.get("note") or ev.get("message") or ""
    ns, kind, name = ref.get("namespace", ""), ref.get("kind", ""), ref.get("name", "")
    if reason == "FailedCreate":
        m = re.search(r"exceeded quota: ([\w.-]+)", note)
        if m:
            facts["quota_full"].add(entity(ns, "ResourceQuota", m.group(1)))
    if kind.endswith("Chaos"):
        facts["chaos"].add(entity(ns, kind, name))
    if kind == "Pod" and ("ErrImagePull" in note or "ImagePullBackOff" in note or "Failed to pull image" in note):
        facts["image_pull"].add(workload(ns, name))
    if kind == "Pod" and ("OOMKilled" in note or reason == "OOMKilling"):
        facts["oom"].add(workload(ns, name))

print(json.dumps({k: sorted(v) for k, v in facts.items()}))
