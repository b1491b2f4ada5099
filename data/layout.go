package data

import (
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// The layout of ITBench-AA, spelled here once: what the readers (OpenLocal, the Hub datasets,
// pulls and verification), the writers (snapshot/pack, snapshot/synth) and the checks
// (snapshot/validate) agree a dataset holds.
const (
	// Category is the benchmark's task category: the folder of the Hub layout holding the
	// index and the task folders, and the category of every index row.
	Category = "sre"
	// IndexFile is the task index of a dataset, one JSON row per task (IndexRow); IndexPath is
	// where it is in a dataset repository.
	IndexFile = "data.jsonl"
	IndexPath = Category + "/" + IndexFile
	// GroundTruthFile is the answer key inside a task folder: never shown to the agent.
	GroundTruthFile = "ground_truth.yaml"
	// ScenarioRoot is where the reference sandbox shows a task's snapshot: every index row's
	// scenario_root.
	ScenarioRoot = shellspec.Workdir
)

// taskPrefix begins the repository paths of the task folders: sre/Scenario-N/...
const taskPrefix = Category + "/"

// The source splits of the index rows.
const (
	SplitPublic  = "public"
	SplitPrivate = "private"
)

// ValidSplit says whether split is one of the source splits.
func ValidSplit(split string) bool {
	return slices.Contains([]string{SplitPublic, SplitPrivate}, split)
}

// NewIndexRow is the index row of the task id of a source split, with its ground truth, as the
// Hub dataset has it: its id_aa is it-bench-sre-SPLIT-scenario-N.
func NewIndexRow(id, split string, groundTruth []byte) IndexRow {
	return IndexRow{IDAA: "it-bench-" + Category + "-" + split + "-" + strings.ToLower(id), ScenarioID: id,
		Category: Category, SourceSplit: split, ScenarioRoot: ScenarioRoot, GroundTruthYAML: string(groundTruth)}
}
