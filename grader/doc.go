// Package grader scores root-cause diagnoses as the ITBench-AA leaderboard does: each (task,
// repeat) scores 0 if any true root cause is missing, else the precision of the submission; the
// headline is the mean over tasks x repeats. These are its rules; each is tested on its own
// (match_test.go) and on the real public ground truths.
//
// # Submissions
//
// Accepted forms, read with gjson:
//
//   - the reference harness's `{"contributing_factors": [{"name": "...", "reasoning": "...", "evidence": "..."}]}`;
//   - IBM's `{"entities": [{"name": "...", "contributing_factor": true}]}`: only entries with
//     `contributing_factor: true` count; an `entities` list in which no item carries
//     `contributing_factor` (names, or objects with `name` alone) is read as a plain list, every
//     entity it names counting;
//   - a bare JSON array of names, or of objects with `name`;
//   - any of these inside a Markdown code fence or surrounded by prose: the first complete JSON value
//     that holds one of these lists is used, except that a bare array none of whose names is an
//     entity of a known kind (a list of files such as `["alerts","k8s_events_raw.tsv"]` quoted
//     before the answer) is used only when no later value is an answer.
//
// A file larger than 4 MiB, with no JSON, or with no recognisable list is `invalid` (score 0, the
// reason is reported); so is a list whose items all fail to name an entity (objects without
// `name`, a name that is not a string, numbers), the reason naming the first items and why
// (`item 1 has no "name" (keys: "nam")`), and JSON that breaks, the reason saying where (`invalid
// JSON at line 3, column 22: ...`, or where the file ends inside a value): the value read is
// the object holding `contributing_factors` or `entities`, else the first object or array.
// Items of a list that names entities too, and items an answer leaves out itself
// (`contributing_factor: false`), do not make it invalid. Blank names are ignored; identical
// entities after normalisation (trimmed, canonical kind, case-folded) count once. Names that
// are not `namespace/Kind/name` or `Kind/name` still count, as predictions that match nothing.
//
// At most 200 distinct entities (MaxEntities) are graded: the first 200, in the submission's
// order. A real diagnosis names a handful (IBM's agents about six), so the bound only meets an
// answer that lists everything it saw; without it, one answer of 250,000 names made a 6 MB
// report.md, a 41 MB viewer page, and a judge call of all of them. The entities past the bound
// are not matched, neither listed as predictions nor sent to the LLM judge, but they are
// counted (`entities_dropped` in `grade --json`, summary.json and results.jsonl; a note in the
// text output, report.md and the viewer) and each scores as a false positive (see Score).
//
// # Ground truths
//
// Both envelopes (flat, or wrapped `apiVersion`/`kind`/`metadata`/`spec`);
// snake_case or camelCase keys; `filter` as a list or a string; groups with only `name`; missing or
// null namespaces. Alias lists merge groups into scoring sets, transitively; groups sharing an id
// (Scenario-18 has one twice) share a set. A scoring set is a root-cause set when any of its groups
// has `root_cause: true`.
//
// # Matching
//
// Deterministic, approximating the official LLM judge; each rule is tested on its
// own in match_test.go:
//
//  1. Entities are `namespace/Kind/name`, trimmed of spaces and slashes. `Kind/name` names a
//     cluster-scoped object or one whose namespace was left out: it matches only groups without a
//     namespace and groups of cluster-scoped kinds.
//  2. Kinds compare case-insensitively after mapping kubectl short names and plurals (`deploy`,
//     `po`, `svc`, `cm`, `netpol`, `hpa`, `ns`, `rs`, `sts`, `ds`, `no`, `quota`, ...; an API group
//     suffix such as `deployments.apps` is dropped; chaos-mesh kinds in any capitalisation, `HttpChaos`
//     = `HTTPChaos`).
//  3. Deployment, Pod, ReplicaSet, StatefulSet and DaemonSet match each other; the full name or the
//     workload name may match the group. A Pod name loses its ReplicaSet hash and pod suffix
//     (`checkout-8546fdc74d-d68cn` -> `checkout`), a StatefulSet ordinal or a DaemonSet suffix; a
//     ReplicaSet name loses its hash. Strictly: only a suffix Kubernetes could have generated, from
//     its alphabet `bcdfghjklmnpqrstvwxz2456789` (no vowels, no 0, 1 or 3), is dropped, so
//     `checkout-7f9c8d6b5-abcde` stays as written and matches only by its full name (a `checkout-.*`
//     group). Every generated suffix in a snapshot uses that alphabet, while a lenient rule would
//     cut real words (`frontend-proxy` -> `frontend`, `otel-collector-agent` -> `otel`) and credit
//     them to another workload; an invented suffix, which the LLM judge might accept, is the price.
//  4. A chaos-mesh `Schedule` matches a group of any chaos kind when the names correspond, and a
//     chaos object matches a `Schedule` group. A chaos object's `-<timestamp>` suffix (what a
//     Schedule spawned) is dropped whichever group it meets, so
//     `chaos-mesh/StressChaos/otel-demo-valkey-memory-stress-1766012345` names Scenario-21's
//     StressChaos `otel-demo-valkey-memory-stress`.
//  5. The namespace must equal the group's (case-insensitively) when the group has one. For
//     cluster-scoped groups (Namespace, Node, PersistentVolume, ...) the entity's namespace part is
//     ignored, so `otel-demo/Namespace/otel-demo`, `cluster/Namespace/otel-demo` and
//     `Namespace/otel-demo` all name the namespace.
//  6. A filter is a case-insensitive regular expression that must match the whole name (`ad-.*`
//     does not match `load-generator`), except that one starting with `.*` reads as "contains":
//     Scenario-25's root-cause Schedule filter `.*recommendation` matches
//     `otel-demo-recommendation-cpu-stress` (likewise Scenario-17's `.*product-catalog`); kind and
//     namespace still have to match. A filter that does not compile is read as a shell glob (`*`
//     and `*.*` mean any name), and `grade` prints one warning for the task naming its glob
//     filters. A filter ending in `-.*`, `-.+` or `\b` also matches the bare prefix (`checkout-.*`
//     matches the Deployment `checkout`). A group with `name` and no filter needs that exact name.
//  7. When several groups match: root-cause groups first, then the group whose id holds the most
//     leading words of the entity's (workload) name as whole `-`-separated words (all of them beats
//     some), then file order. So Scenario-38's two `*.*` HPA groups are told apart by name.
//
// # Score
//
// Per (task, repeat): entities mapped to a root-cause scoring set are true positives,
// all others false positives. If any root-cause set is not hit, or nothing was submitted, the score
// is 0; otherwise TP / (TP + FP). Episodes that are `missing` or `invalid` score 0.
//
// Entities past the bound of 200 are false positives: the precision stays over everything
// submitted, as the official rule has it, and the score is never above what grading them all
// would give (an entity past the bound can only lose the credit it might have earned). Marking
// such an answer `invalid` instead would throw away a diagnosis whose first entities are right;
// grading only the first 200 and ignoring the rest would reward a list of thousands with the
// precision of its head.
//
// # Headline
//
// The mean over tasks x repeats; a 95% confidence interval by bootstrap over tasks
// (10,000 resamples, a task's repeats stay together, fixed seed so the output is reproducible);
// the share of episodes that found every root cause, and their mean precision.
//
// Known quirks of the public ground truths, pinned by tests on the real files: Scenario-1's alias
// list merges the root cause with downstream services (naming the frontend-proxy Service counts);
// Scenario-29's root-cause filter `.*adservice` does not match the Deployment `ad`; Scenario-38's
// filter `*.*` is a glob; Scenario-102's root cause has a null namespace; the chaos root causes of
// Scenario-25 (`.*recommendation`) and Scenario-17 (`.*product-catalog`) need the "contains"
// reading of rule 6, and those of Scenario-21 and 26 name the chaos object, which a spawned
// object reaches only with its timestamp dropped (rule 4).
package grader
