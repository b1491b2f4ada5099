// Package data finds benchmark tasks: local dataset folders in the Hugging Face Hub layout or
// as plain task folders, with the task index (data.jsonl).
package data

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aa-grade/aa-grade/data/hub"
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
	Hub      *PullResult // for hf: specs, the commit and the cache folder the tasks come from
}

// DefaultSpec is the public ITBench-AA dataset on the Hugging Face Hub.
const DefaultSpec = "hf:ArtificialAnalysis/ITBench-AA"

// ErrNotDataset marks a spec that names no dataset; the message says what was expected.
var ErrNotDataset = errors.New("not a dataset")

// ErrUnknownTask marks a task asked for (--tasks) that the dataset does not have, whether the
// dataset is a folder, the demo or on the Hub.
var ErrUnknownTask = errors.New("no such task")

// OpenOptions says which tasks are wanted and how a Hub dataset is fetched.
type OpenOptions struct {
	Hub       hub.Config  // where the Hub and the cache are (see hub.ConfigFromEnv)
	Tasks     []string    // only these tasks (ids as TaskFolder reads them); all when empty
	IndexOnly bool        // only the ground truths are needed: fetch no snapshot files
	Parallel  int         // files downloaded at once
	Progress  func(Event) // told about a pull from the Hub as it goes
}

// Open finds the tasks of a dataset spec (docs/design.md): `hf:OWNER/NAME[@REV]` through the
// shared cache (downloading what is missing unless offline), `demo` (the synthetic dataset
// embedded in the binary), or a local folder.
func Open(ctx context.Context, spec string, opts OpenOptions) (*Dataset, error) {
	var ds *Dataset
	var err error
	switch {
	case spec == "":
		return nil, fmt.Errorf("%w: empty dataset spec", ErrNotDataset)
	case strings.HasPrefix(spec, "hf:"):
		ds, err = openHub(ctx, spec, opts)
	case spec == DemoSpec:
		var dir string
		if dir, err = demoDir(); err == nil {
			ds, err = OpenLocal(dir)
		}
		if ds != nil {
			ds.Spec = DemoSpec
		}
	default:
		ds, err = OpenLocal(spec)
	}
	if err != nil {
		return nil, err
	}
	return ds, ds.KeepTasks(opts.Tasks)
}

func openHub(ctx context.Context, spec string, opts OpenOptions) (*Dataset, error) {
	hs, err := ParseHubSpec(spec)
	if err != nil {
		return nil, err
	}
	res, err := Pull(ctx, opts.Hub, hs,
		PullOptions{Tasks: opts.Tasks, IndexOnly: opts.IndexOnly, Parallel: opts.Parallel, Progress: opts.Progress})
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Spec: hs.String(), Hub: res}
	root := filepath.Join(res.Dir, Category)
	var rows []IndexRow
	var warnings []string
	if len(res.Parquet) > 0 {
		rows, warnings, err = readParquetIndex(res.Parquet)
	} else {
		rows, warnings, err = readIndex(filepath.Join(root, IndexFile))
	}
	if err != nil {
		return nil, err
	}
	ds.Warnings = append(ds.Warnings, warnings...)
	return ds, ds.addHubTasks(root, rows, !opts.IndexOnly && len(opts.Tasks) == 0)
}

// KeepTasks narrows the dataset to the wanted task ids (none: all of them); an id the dataset
// lacks is ErrUnknownTask, naming the ids it has.
func (ds *Dataset) KeepTasks(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	byID := map[string]Task{}
	for _, t := range ds.Tasks {
		byID[t.ID] = t
	}
	var kept []Task
	var missing []string
	seen := map[string]bool{}
	for _, id := range ids {
		t, ok := byID[TaskFolder(id)]
		switch {
		case !ok:
			missing = append(missing, id)
		case !seen[t.ID]:
			seen[t.ID] = true
			kept = append(kept, t)
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(ds.Tasks))
		for _, t := range ds.Tasks {
			have = append(have, t.ID)
		}
		return fmt.Errorf("%s: %w: %s (its tasks: %s)", ds.Spec, ErrUnknownTask, strings.Join(missing, ", "),
			DescribeIDs(have))
	}
	sortTasks(kept)
	ds.Tasks = kept
	return nil
}
