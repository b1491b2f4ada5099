package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// BenchmarkReports reads a run folder of 300 tasks x 3 repeats (five times the published
// run) and writes its three reports.
func BenchmarkReports(b *testing.B) {
	dir := b.TempDir()
	h := runfolder.Header{Model: "anthropic/claude-opus-4-7", Repeats: 3, Settings: settings.Settings{MaxTurns: 100}}
	var lines strings.Builder
	for i := range 300 {
		task := fmt.Sprintf("Scenario-%d", i+1)
		h.Tasks = append(h.Tasks, task)
		for r := 1; r <= 3; r++ {
			cost := float64(i%7) * 0.4
			line, _ := json.Marshal(runfolder.Result{Task: task, Repeat: r, Status: "ok", Score: float64((i+r)%3) / 2, TP: 1,
				Turns: (i * r) % 101, ToolCalls: (i * r) % 90, Tokens: model.Usage{Input: 900000, CachedRead: 800000, Output: 20000},
				CostUSD: &cost, Duration: 400})
			lines.Write(append(line, '\n'))
		}
	}
	header, _ := json.Marshal(h)
	testfs.Write(b, filepath.Join(dir, "run.json"), string(header))
	testfs.Write(b, filepath.Join(dir, "results.jsonl"), lines.String())
	for b.Loop() {
		r, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteParquet(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		if err := WriteMarkdown(io.Discard, r); err != nil {
			b.Fatal(err)
		}
		if err := WriteHTML(io.Discard, []*Run{r}); err != nil {
			b.Fatal(err)
		}
	}
}
