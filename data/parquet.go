package data

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// parquetRow is IndexRow as the Hub's parquet conversion stores it.
type parquetRow struct {
	IDAA            string `parquet:"id_aa,optional"`
	ScenarioID      string `parquet:"scenario_id,optional"`
	Category        string `parquet:"category,optional"`
	SourceSplit     string `parquet:"source_split,optional"`
	ScenarioRoot    string `parquet:"scenario_root,optional"`
	GroundTruthYAML string `parquet:"ground_truth_yaml,optional"`
}

// readParquetIndex reads index rows from parquet files (the Hub's conversion of data.jsonl,
// or a local copy). Rows without a usable scenario_id, or repeating one, are reported.
func readParquetIndex(files []string) ([]IndexRow, []string, error) {
	var rows []IndexRow
	var warnings []string
	seen := map[string]bool{}
	for _, f := range files {
		prows, err := parquet.ReadFile[parquetRow](f)
		if err != nil {
			return nil, nil, fmt.Errorf("read parquet index %s: %w", f, err)
		}
		for i, p := range prows {
			row := IndexRow(p)
			if w := checkRow(row, seen); w != "" {
				warnings = append(warnings, fmt.Sprintf("%s row %d: %s", f, i+1, w))
				continue
			}
			rows = append(rows, row)
		}
	}
	return rows, warnings, nil
}

// writeParquet writes index rows as parquet (for tests, and for `tasks pack`).
func writeParquet(w io.Writer, rows []parquetRow) error {
	return parquet.Write(w, rows)
}
