package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
)

// SystemPrompt sets the model's role, as the reference contract does.
const SystemPrompt = "You are an expert site reliability engineer (SRE) investigating a production incident " +
	"in a Kubernetes cluster. You work offline, from a snapshot of the cluster's telemetry recorded during " +
	"the incident, with a bash shell in a sandbox. Be rigorous: every conclusion must rest on evidence you " +
	"found in the data."

// PromptFacts are the facts of one sandbox that the task prompt states.
type PromptFacts struct {
	Workdir string            // where the data is and where the model works
	Python  map[string]string // the Python packages found in the sandbox, with versions ("" missing)
}

// Placeholders a --prompt-file may use; they are replaced by the facts of the sandbox.
const (
	PlaceholderWorkdir = "{{workdir}}"
	PlaceholderOutput  = "{{output_path}}"
	PlaceholderPython  = "{{python_packages}}"
)

// defaultTaskPrompt carries every fact of the reference task contract; the placeholders are
// filled as in a user's prompt file.
const defaultTaskPrompt = `An incident happened in a Kubernetes cluster running a microservice application. A snapshot of the cluster's telemetry, recorded during the incident, is in your working directory, {{workdir}}.

## Your objective
Find the root cause: the minimal set of independent Kubernetes entities whose failures directly explain the incident. Write it to {{output_path}}, then call the finish tool with that file.

## The data (read it with shell commands; use relative paths)
- alerts/: the firing Prometheus alerts, one JSON file a minute (the time is in the file name).
- k8s_events_raw.tsv: Kubernetes events; the Body column is the event as JSON.
- k8s_objects_raw.tsv: full dumps of the cluster's objects every 5 minutes; the Body column is the object as JSON.
- otel_logs_raw.tsv and otel_traces_raw.tsv: application logs and trace spans (Duration in nanoseconds, StatusCode Error/Unset/Ok).
- metrics/pod_<pod>_raw.tsv and metrics/service_<service>_raw.tsv: raw counters and histogram buckets (not rates).
The TSV files were written by pandas (tab-separated, quoted fields may hold tabs and newlines): read them with pandas or Python's csv module rather than line by line. Attribute columns hold Python dict literals. Timestamps are UTC.

Tools: bash with the usual command-line tools (grep, sed, awk, jq, ...), python and python3 with these packages: {{python_packages}}. There is no network.

## Output
Name each entity as namespace/Kind/name with its exact Kubernetes kind and name, for example otel-demo/Deployment/checkout, otel-demo/ConfigMap/flagd-config, chaos-mesh/NetworkChaos/otel-demo-checkout-partition; cluster-scoped objects as cluster/Kind/name, for example cluster/Node/worker-1. No UIDs.
Write exactly this JSON to {{output_path}}:
{"contributing_factors": [{"name": "namespace/Kind/name", "reasoning": "why this entity is a root cause", "evidence": "the files, timestamps and values that show it"}]}

## What to include
- Include an entity only with qualifying evidence in the alerts, events, logs, metrics or traces.
- Irreducibility: leave out any entity whose failure another listed entity explains. Downstream symptoms (services that fail because something they call failed) are not root causes.
- List several entities only when they failed independently of each other.
- Prefer the most specific object that was changed or broken (a ConfigMap, a NetworkPolicy, a Deployment, a chaos experiment) over the services that suffered from it.

## Workflow
1. Discover the files and their formats.
2. Analyse the alerts and the time window of the incident.
3. Form hypotheses about what changed or broke first.
4. Test them against events, object changes, logs, traces and metrics until the evidence is conclusive.
5. Trace the causal chain from the root cause to the alerts.
6. Conclude: write {{output_path}} and call the finish tool in a turn of its own.`

// TaskPrompt is the built-in task prompt for a sandbox.
func TaskPrompt(f PromptFacts) string { return FillPrompt(defaultTaskPrompt, f) }

// FillPrompt replaces the placeholders of a task prompt (the built-in one, or a user's
// --prompt-file) with the facts of the sandbox.
func FillPrompt(template string, f PromptFacts) string {
	return strings.NewReplacer(
		PlaceholderWorkdir, f.Workdir,
		PlaceholderOutput, path.Join(f.Workdir, SubmissionFile),
		PlaceholderPython, pythonPackages(f.Python),
	).Replace(template)
}

// pythonPackages states the packages as they were actually found.
func pythonPackages(found map[string]string) string {
	var have, missing []string
	for name, version := range found {
		if version == "" {
			missing = append(missing, name)
		} else {
			have = append(have, name+" "+version)
		}
	}
	sort.Strings(have)
	sort.Strings(missing)
	out := "none found"
	if len(have) > 0 {
		out = strings.Join(have, ", ")
	}
	if len(missing) > 0 {
		out += fmt.Sprintf(" (not installed: %s)", strings.Join(missing, ", "))
	}
	return out
}

// PromptSHA256 identifies the prompts of a run (recorded in its header): the system prompt and
// the task prompt template, before the sandbox's facts are filled in.
func PromptSHA256(system, taskTemplate string) string {
	sum := sha256.Sum256([]byte(system + "\x00" + taskTemplate))
	return hex.EncodeToString(sum[:])
}

// DefaultTaskTemplate is the built-in task prompt with its placeholders, for hashing and for
// users who start their own prompt file from it.
func DefaultTaskTemplate() string { return defaultTaskPrompt }
