package viewer

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// BenchmarkEpisodePage opens the page of a finished episode of 100 turns whose commands each
// printed 50000 characters (the model saw 20000 of each, cut in the middle): the trajectory is
// as aa-grade run writes it, every request carrying the whole conversation, about 100 MB of
// JSON zstd-compressed to a few MB, read from the disk for every page.
func BenchmarkEpisodePage(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	writeRun(b, dir, []string{"Scenario-901"}, 1,
		episodeSpec{task: "Scenario-901", repeat: 1, turns: 100, output: 50000, finished: true, submitted: []string{"otel-demo/ConfigMap/flagd-config"}})
	info, err := os.Stat(filepath.Join(runfolder.EpisodeDir(dir, runfolder.Episode{Task: "Scenario-901", Repeat: 1}), runfolder.TrajectoryFile+".zst"))
	if err != nil {
		b.Fatal(err)
	}
	v := newTestViewer(b, dir)
	var size int
	for b.Loop() {
		w := get(b, v, "/runs/1/Scenario-901/1.html")
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(info.Size())/1e6, "MB-zst")
	b.ReportMetric(float64(size)/1e6, "MB-page")
}

// BenchmarkRunsPage lists a run of 300 tasks x 3 repeats, every episode finished.
func BenchmarkRunsPage(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	var tasks []string
	var eps []episodeSpec
	for i := range 300 {
		task := fmt.Sprintf("Scenario-%d", i+1)
		tasks = append(tasks, task)
		for r := 1; r <= 3; r++ {
			eps = append(eps, episodeSpec{task: task, repeat: r, turns: 1, output: 10, finished: true})
		}
	}
	writeRun(b, dir, tasks, 3, eps...)
	v := newTestViewer(b, dir)
	var size int
	for b.Loop() {
		w := get(b, v, "/")
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB-page")
}
