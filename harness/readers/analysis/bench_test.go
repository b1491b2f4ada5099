package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// BenchmarkReadTopology reads the call topology of a demo task's traces (840 kB, 1,400 spans);
// b.SetBytes makes the figure a throughput to scale to real tables of hundreds of MB.
func BenchmarkReadTopology(b *testing.B) {
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	ds, err := data.Open(context.Background(), data.DemoSpec, data.OpenOptions{Tasks: []string{"Scenario-901"}})
	if err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(ds.Tasks[0].Dir, TracesFile))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(info.Size())
	for b.Loop() {
		if _, err := ReadTopology(ds.Tasks[0].Dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvestigate analyses a 100-turn episode whose replies never name the root cause,
// so every turn is searched for a mention.
func BenchmarkInvestigate(b *testing.B) {
	_, k := realKey(b, "scenario_2", nil)
	var turns []runfolder.TurnRecord
	for n := 1; n <= 100; n++ {
		cmd := fmt.Sprintf("grep -n 'cart' otel_logs_raw.tsv | awk -F'\\t' '{print $%d}' | sort | uniq -c | head -%d", n%20, n)
		turns = append(turns, turn(n, 5000, []model.Message{result(n-1, 0, ok)}, "The cart service returns errors on EmptyCart; checking its callers next.", cmd))
	}
	for b.Loop() {
		Investigate(turns, k, nil)
	}
}
