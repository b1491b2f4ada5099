// Package judge maps submitted entities to ground-truth groups by asking a model, as the
// official ITBench-AA grading does: the model gets the whole ground truth and the whole
// submission and answers with a confident match, or none, per entity. Answers are cached on
// disk, so grading again costs nothing and gives the same result; when the judge cannot
// answer, the deterministic rules of package grader decide.
//
// # How it asks
//
// The official runs map entities to groups
// with an LLM judge; `--judge` does the same with any model `--model` accepts (OpenAI, Anthropic,
// OpenRouter, an OpenAI-compatible server, or a preset), at `--judge-effort` (the provider's
// reasoning effort; the official grading reports GPT-5.5 at medium, so `--judge openai/gpt-5.5
// --judge-effort medium`). For each graded episode the judge gets, in one call
// with no tools, its own system prompt carrying the reference judge's rules (confident matches
// only; kinds as kubectl names them; filters read as rule 6 reads them; aliases honoured;
// Deployment and Pod, and the other workload kinds, equivalent when namespace and workload name
// correspond; a chaos-mesh `Schedule` matching the chaos object it spawns and back, a spawned
// object's timestamp dropped; cluster-scoped objects whatever the namespace part; `null` when
// unsure, never a guess), then the ground truth's groups (id, kind, namespace, name or
// filters, root_cause) and alias sets and the submission's distinct entities (the first 200
// only, grader.MaxEntities: the rest are false positives without a question), one JSON value a
// line. It answers one JSON object, entity -> group id or `null`, which is checked: a code fence
// or prose around it is tolerated, an entity written slightly differently (`deploy` for
// `Deployment`, other case) is recognised, an unknown group id or a missing answer leaves the
// entity unmatched and a key that is not a submitted entity is ignored, each noted in
// `judge_note`; a reply with no such object, a value that is neither a string nor `null`, or no
// answer for any entity is a failed call. The mapping is then scored exactly as the rules' is.
//
//   - Cache: each answer is kept in `$XDG_CACHE_HOME/aa-grade/judge/<sha256>.json` (else
//     `~/.cache/...`; a run's in its run folder's `judge/`, so the run carries its verdicts),
//     keyed by the judge's model spec, effort and prompt, the ground truth's bytes, the entities
//     and the prompt text, and written atomically; grading again asks nothing and gives the
//     same result, and grading a run folder also reads its `judge/`. A new prompt, model,
//     ground truth or submission is a new question. Failed calls are not cached; a corrupt
//     cache file is asked again. Delete the folder to ask everything again.
//   - Another prompt: `--judge-prompt FILE` (Prompt) replaces the built-in one with the user's
//     text, its placeholders filled in per question; the reply must keep the built-in
//     prompt's shape. Its sha256 joins the judge's name.
//   - Fallback: when the call fails (after the provider's own retries: rate limits and server
//     errors for up to 10 minutes, a bad key or an unknown model at once) or the reply is
//     malformed, the rules grade the episode, with `matcher: rules` and `judge_note: "judge failed,
//     the rules decided: ..."`; `grade` prints one warning naming how many and the first reason,
//     `run` appends it to the episode's progress line. The exit code follows the usual rules.
//   - Reading the agreement: beside every episode the judge decided, `rules` is the rules' grade
//     of the same submission. `score_agreement` is the share of judged episodes whose two scores
//     are equal; `entity_agreement` the share of their entities that both map to the same scoring
//     set (an alias of the same set counts as the same; both unmatched counts as agreeing);
//     `rules_score` is what the headline would be with the rules alone. High agreement says the
//     rules are a fair stand-in for the judge on these submissions (and that `grade` without a
//     judge is close to the official mapping); each disagreement is listed in
//     `rules.disagreed[]` for review: either the judge was more or less lenient than the rules, or
//     one of them is wrong.
//   - Cost: `grade` and `run` end with a line on stderr, `judge: N calls (cached answers are free),
//     X input and Y output tokens, $Z` (`cost unknown` unless the judge is a preset with prices).
//     The judge's tokens are not part of a run's `cost_usd`, which is the model's under test;
//     `run --judge` records each of its calls in the run's ledger of spend (spend.jsonl, marked
//     as the judge's), which --max-cost and "spent in all" count: the run paid for them.
package judge
