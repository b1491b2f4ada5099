// Package data finds benchmark tasks: local dataset folders in the Hugging Face Hub layout or
// as plain task folders, with the task index (data.jsonl).
package data

import (
	"errors"
	"fmt"
	"strings"
)

// Task is one benchmark task as a dataset provides it.
type Task struct {
	ID          string    // the scenario id, also the folder name: Scenario-2
	Dir         string    // the snapshot folder; "" when the dataset has no folder for the task
	GroundTruth []byte    // the answer key: the index row's when there is one, else the folder's
	Row         *IndexRow // nil when the dataset has no index
}

// IndexRow is one line of sre/data.jsonl.
type IndexRow struct {
	IDAA            string `json:"id_aa"`
	ScenarioID      string `json:"scenario_id"`
	Category        string `json:"category"`
	SourceSplit     string `json:"source_split"`
	ScenarioRoot    string `json:"scenario_root"`
	GroundTruthYAML string `json:"ground_truth_yaml"`
}

// Dataset is a list of tasks and what was noticed while finding them.
type Dataset struct {
	Spec     string
	Tasks    []Task
	Warnings []string
}

// DefaultSpec is the public ITBench-AA dataset on the Hugging Face Hub.
const DefaultSpec = "hf:ArtificialAnalysis/ITBench-AA"

// ErrNotDataset marks a spec that names no dataset; the message says what was expected.
var ErrNotDataset = errors.New("not a dataset")

// ErrUnsupported marks a dataset spec this version cannot open yet.
var ErrUnsupported = errors.New("not supported yet")

// Open finds the tasks of a dataset spec (DESIGN.md): today a local folder.
func Open(spec string) (*Dataset, error) {
	switch {
	case spec == "":
		return nil, fmt.Errorf("%w: empty dataset spec", ErrNotDataset)
	case strings.HasPrefix(spec, "hf:"):
		return nil, fmt.Errorf("dataset %s: Hub datasets are %w; pass a local folder in the Hub layout", spec, ErrUnsupported)
	case spec == "demo":
		return nil, fmt.Errorf("dataset demo: the embedded demo dataset is %w", ErrUnsupported)
	}
	return OpenLocal(spec)
}
