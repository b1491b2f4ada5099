// Package leaderboard holds the published ITBench-AA numbers (May 2026, 59 tasks x 3 repeats)
// so reports and `aa-grade models` can put a local run beside them. The 40 public tasks are a
// subset of the 59, so a local run estimates, but cannot equal, a published figure.
package leaderboard

// Source is where the published numbers come from.
const Source = "artificialanalysis.ai/articles/itbench-aa-launch and huggingface.co/blog/ibm-research/itbench-aa " +
	"(decimals from press re-reports)"

// Date is when the numbers were published.
const Date = "2026-05-27"

// Tasks is how many tasks the published runs used (the public dataset has 40 of them).
const Tasks = 59

// Dataset is the Hub dataset whose public tasks are among those the published runs used.
const Dataset = "ArtificialAnalysis/ITBench-AA"

// PublicTasks are the ids of Dataset's 40 public tasks (its sre/data.jsonl), every one of them
// among the 59 the published runs used: a run of other tasks measures something else.
var PublicTasks = []string{
	"Scenario-1", "Scenario-2", "Scenario-3", "Scenario-4", "Scenario-5", "Scenario-6", "Scenario-7", "Scenario-8",
	"Scenario-9",
	"Scenario-11", "Scenario-12", "Scenario-13", "Scenario-14", "Scenario-15", "Scenario-16", "Scenario-17", "Scenario-18",
	"Scenario-19", "Scenario-20", "Scenario-21", "Scenario-22", "Scenario-23", "Scenario-24", "Scenario-25", "Scenario-26",
	"Scenario-27", "Scenario-29", "Scenario-31", "Scenario-33", "Scenario-34", "Scenario-35", "Scenario-37", "Scenario-38",
	"Scenario-40", "Scenario-80", "Scenario-81", "Scenario-83", "Scenario-91", "Scenario-102", "Scenario-105",
}

// Row is one published leaderboard entry. Unpublished figures are nil, never zero.
type Row struct {
	Label       string   `json:"label"`         // the leaderboard's own wording
	Score       float64  `json:"score"`         // 0..1
	AvgTurns    *float64 `json:"avg_turns"`     // mean turns per episode
	CostPerTask *float64 `json:"cost_per_task"` // USD
}

func f(v float64) *float64 { return &v }

// Published is the leaderboard as published, best first.
var Published = []Row{
	{Label: "Claude Opus 4.7 (Adaptive Reasoning, Max Effort)", Score: 0.467, CostPerTask: f(5.38)},
	{Label: "GPT-5.5 (xhigh)", Score: 0.458, AvgTurns: f(31)},
	{Label: "Qwen3.7 Max", Score: 0.42},
	{Label: "GLM-5.1 (Reasoning)", Score: 0.40, CostPerTask: f(1.23)},
	{Label: "Gemini 3.5 Flash (high)", Score: 0.40, CostPerTask: f(1.70)},
	{Label: "DeepSeek V4 Pro (Reasoning, Max Effort)", Score: 0.38},
	{Label: "Gemma 4 31B (Reasoning)", Score: 0.37, AvgTurns: f(58), CostPerTask: f(0.14)},
	{Label: "Gemini 3.1 Pro Preview", Score: 0.30, AvgTurns: f(83), CostPerTask: f(2.23)},
}

// Find returns the published row with this label.
func Find(label string) (Row, bool) {
	for _, r := range Published {
		if r.Label == label {
			return r, true
		}
	}
	return Row{}, false
}
