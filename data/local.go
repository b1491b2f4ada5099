package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// maxGroundTruthBytes bounds how much of a ground-truth file is read; the grader refuses
// anything past its own limit, so one byte more than that is enough to tell.
const maxGroundTruthBytes = 4<<20 + 1

// maxIndexLine bounds one line of data.jsonl (a row carries a whole ground truth).
const maxIndexLine = 16 << 20

// OpenLocal reads a dataset folder: the Hub layout (`sre/data.jsonl` and `sre/Scenario-N/`,
// or the `sre` folder itself), a folder of task folders each holding ground_truth.yaml, or one
// task folder.
func OpenLocal(path string) (*Dataset, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("dataset %s: %w: no such folder (a dataset is hf:OWNER/NAME, %s or a folder)", path,
			ErrNotDataset, DemoSpec)
	case err != nil:
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("dataset %s: %w: it is a file, expected a folder", path, ErrNotDataset)
	}
	ds := &Dataset{Spec: path}
	for _, root := range []string{filepath.Join(path, Category), path} {
		rows, warnings, found, err := readLocalIndex(root)
		if err != nil {
			return nil, err
		}
		if found {
			ds.Warnings = append(ds.Warnings, warnings...)
			return ds, ds.addHubTasks(root, rows, true)
		}
	}
	if exists(filepath.Join(path, GroundTruthFile)) {
		t, err := readTaskFolder(path)
		if err != nil {
			return nil, err
		}
		ds.Tasks = []Task{t}
		return ds, nil
	}
	for _, root := range []string{path, filepath.Join(path, Category)} {
		if err := ds.readTaskFolders(root); err != nil {
			return nil, err
		}
		if len(ds.Tasks) > 0 {
			return ds, nil
		}
	}
	return nil, fmt.Errorf("dataset %s: %w: expected %s, task folders holding %s, or a task folder", path, ErrNotDataset,
		IndexPath, GroundTruthFile)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readLocalIndex reads the task index of a folder: data.jsonl, else the .parquet files beside
// it. found is false when the folder has neither.
func readLocalIndex(root string) (rows []IndexRow, warnings []string, found bool, err error) {
	if jsonl := filepath.Join(root, IndexFile); exists(jsonl) {
		rows, warnings, err = readIndex(jsonl)
		return rows, warnings, true, err
	}
	parquetFiles, _ := filepath.Glob(filepath.Join(root, "*.parquet"))
	if len(parquetFiles) == 0 {
		return nil, nil, false, nil
	}
	rows, warnings, err = readParquetIndex(parquetFiles)
	return rows, warnings, true, err
}

// addHubTasks pairs each index row with its scenario folder under root. The row's ground
// truth wins over the folder's; a difference and a folder without a row are warnings, and so
// is a row without a folder when folders are expected.
func (ds *Dataset) addHubTasks(root string, rows []IndexRow, expectFolders bool) error {
	listed := map[string]bool{}
	for _, row := range rows {
		listed[row.ScenarioID] = true
		t := Task{ID: row.ScenarioID, GroundTruth: []byte(row.GroundTruthYAML), Row: &row}
		dir := filepath.Join(root, row.ScenarioID)
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			t.Dir = dir
			folderGT, err := readGroundTruth(dir)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				ds.Warnings = append(ds.Warnings, err.Error())
			case len(bytes.TrimSpace(t.GroundTruth)) == 0:
				t.GroundTruth = folderGT
			case !bytes.Equal(bytes.TrimSpace(folderGT), bytes.TrimSpace(t.GroundTruth)):
				ds.Warnings = append(ds.Warnings, fmt.Sprintf(
					"%s: %s differs from the ground_truth_yaml of its data.jsonl row; the row is used", row.ScenarioID,
					GroundTruthFile))
			}
		} else if expectFolders {
			ds.Warnings = append(ds.Warnings, fmt.Sprintf("%s: listed in data.jsonl but has no folder", row.ScenarioID))
		}
		ds.Tasks = append(ds.Tasks, t)
	}
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dataset %s: %w", root, err)
	}
	for _, e := range entries {
		if e.IsDir() && !listed[e.Name()] && exists(filepath.Join(root, e.Name(), GroundTruthFile)) {
			ds.Warnings = append(ds.Warnings, fmt.Sprintf("%s: folder has no row in data.jsonl; ignored", e.Name()))
		}
	}
	sortTasks(ds.Tasks)
	return nil
}

// readIndex reads data.jsonl. A line that is not a JSON object with a scenario_id, or repeats
// one, is reported and skipped.
func readIndex(path string) ([]IndexRow, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read index: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	var rows []IndexRow
	var warnings []string
	seen := map[string]bool{}
	r := bufio.NewReaderSize(f, 64<<10)
	for line := 1; ; line++ {
		text, err := readLine(r)
		if errors.Is(err, io.EOF) && len(text) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("read index %s line %d: %w", path, line, err)
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		var row IndexRow
		if jerr := json.Unmarshal(text, &row); jerr != nil {
			warnings = append(warnings, fmt.Sprintf("%s line %d: not a JSON object (%v); skipped", path, line, jerr))
			continue
		}
		if w := checkRow(row, seen); w != "" {
			warnings = append(warnings, fmt.Sprintf("%s line %d: %s", path, line, w))
			continue
		}
		rows = append(rows, row)
	}
	return rows, warnings, nil
}

// checkRow says why an index row cannot be used ("" when it can) and records its id.
func checkRow(row IndexRow, seen map[string]bool) string {
	switch {
	case row.ScenarioID == "" || filepath.Base(row.ScenarioID) != row.ScenarioID || row.ScenarioID == "..":
		return fmt.Sprintf("scenario_id %q is not a folder name; skipped", row.ScenarioID)
	case seen[row.ScenarioID]:
		return fmt.Sprintf("%s listed twice; the first row is used", row.ScenarioID)
	}
	seen[row.ScenarioID] = true
	return ""
}

// readLine reads one line of at most maxIndexLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxIndexLine {
			return nil, fmt.Errorf("line longer than %d MiB", maxIndexLine>>20)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// readTaskFolders adds every sub-folder of root holding a ground truth as a task.
func (ds *Dataset) readTaskFolders(root string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dataset %s: %w", root, err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || !exists(filepath.Join(dir, GroundTruthFile)) {
			continue
		}
		t, err := readTaskFolder(dir)
		if err != nil {
			ds.Warnings = append(ds.Warnings, err.Error())
			continue
		}
		ds.Tasks = append(ds.Tasks, t)
	}
	sortTasks(ds.Tasks)
	return nil
}

func readTaskFolder(dir string) (Task, error) {
	gt, err := readGroundTruth(dir)
	if err != nil {
		return Task{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Task{}, fmt.Errorf("task folder %s: %w", dir, err)
	}
	return Task{ID: filepath.Base(abs), Dir: dir, GroundTruth: gt}, nil
}

func readGroundTruth(dir string) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, GroundTruthFile))
	if err != nil {
		return nil, fmt.Errorf("read ground truth: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	gt, err := io.ReadAll(io.LimitReader(f, maxGroundTruthBytes))
	if err != nil {
		return nil, fmt.Errorf("read ground truth %s: %w", f.Name(), err)
	}
	return gt, nil
}

// sortTasks orders tasks naturally: Scenario-2 before Scenario-10.
func sortTasks(tasks []Task) {
	slices.SortStableFunc(tasks, func(a, b Task) int { return NaturalCompare(a.ID, b.ID) })
}
