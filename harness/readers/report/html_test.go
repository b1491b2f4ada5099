package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// writeRun writes a run folder of model with the given tasks and repeats and result lines.
func writeRun(t *testing.T, dir, model string, tasks []string, repeats int, results ...string) *Run {
	t.Helper()
	names, _ := json.Marshal(tasks)
	testfs.Write(t, filepath.Join(dir, "run.json"), fmt.Sprintf(`{"model": %q, "dataset": "demo", "tasks": %s, "repeats": %d, "prices": {"input": 1, "output": 1}}`,
		model, names, repeats))
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), strings.Join(results, "\n")+"\n")
	return load(t, dir)
}

func result(task string, repeat int, status string, score, cost float64) string {
	return fmt.Sprintf(`{"task":%q,"repeat":%d,"status":%q,"score":%v,"turns":5,"tokens":{"input":10},"cost_usd":%v}`, task, repeat, status, score, cost)
}

// TestHTMLTellsRunsOfOneModelApart: three runs of one model are labelled by model and folder
// on the leaderboard, in the legends and in the list of episodes.
func TestHTMLTellsRunsOfOneModelApart(t *testing.T) {
	base := t.TempDir()
	var runs []*Run
	for _, name := range []string{"opus-a", "opus-b", "opus-c"} {
		runs = append(runs, writeRun(t, filepath.Join(base, name), "anthropic/claude-opus-4-7", []string{"Scenario-2"}, 1,
			result("Scenario-2", 1, "max_turns", 0, 0.2)))
	}
	page := renderFullHTML(t, runs...)
	for i, name := range []string{"opus-a", "opus-b", "opus-c"} {
		// On the leaderboard, in the three legends, and over the run's episodes.
		label := regexp.MustCompile(`>(R\d )?anthropic/claude-[^<]* · [^<]*/` + name + `</(text|span|h3)>`)
		if n := len(label.FindAllString(page, -1)); n != 5 {
			t.Errorf("R%d is labelled by model and folder %d times, want 5:\n%s", i+1, n, page)
		}
	}
	if strings.Contains(page, ">anthropic/claude-opus-4-7</text>") {
		t.Error("a leaderboard row is labelled by the model alone")
	}
}

// TestRunLabel: the model and the folder, the model shortened first, a long folder by its
// end.
func TestRunLabel(t *testing.T) {
	for _, c := range []struct {
		model, dir string
		width      int
		want       string
	}{
		{"openai/gpt-5.5", "runs/gpt", 46, "openai/gpt-5.5 · runs/gpt"},
		{"openai/gpt-5.5", "runs/gpt/", 46, "openai/gpt-5.5 · runs/gpt"},
		{"openai-api/vllm/Qwen/Qwen3-32B", "/work/wt-display/testdata/runs/qwen", 46, "openai-api/vllm/Qwe… · …lay/testdata/runs/qwen"},
		{"openai-api/vllm/Qwen/Qwen3-32B", "/work/wt-display/testdata/runs/qwen", 90, "openai-api/vllm/Qwen/Qwen3-32B · …-display/testdata/runs/qwen"},
	} {
		got := runLabel(Overview{Model: c.model, Dir: c.dir}, c.width)
		if got != c.want || len([]rune(got)) > c.width {
			t.Errorf("runLabel(%q, %q, %d) = %q, want %q", c.model, c.dir, c.width, got, c.want)
		}
	}
}

var (
	circleRe = regexp.MustCompile(`<circle cx="([0-9.]+)" cy="([0-9.]+)"`)
	tickRe   = regexp.MustCompile(`text-anchor="middle">(\$[0-9.]+)</text>`)
)

// TestHTMLScatterAxesAndOverlaps: cost ticks all have cents ($0, $0.20 ... $1.00, never
// $0.200); no point sits on an axis; two runs with the same tasks, costs and scores show every
// point, none hidden under another.
func TestHTMLScatterAxesAndOverlaps(t *testing.T) {
	var runs []*Run
	for _, name := range []string{"a", "b"} {
		runs = append(runs, writeRun(t, filepath.Join(t.TempDir(), name), "openai/gpt-5.5", []string{"Scenario-1", "Scenario-2", "Scenario-3"}, 1,
			result("Scenario-1", 1, "ok", 1, 0), result("Scenario-2", 1, "max_turns", 0, 0.9), result("Scenario-3", 1, "ok", 0.5, 0.45)))
	}
	v := scatterChart(runs, []string{"R1", "R2"}, sizes[0])
	var ticks []string
	for _, tk := range v.XTicks {
		ticks = append(ticks, tk.Label)
	}
	if got := strings.Join(ticks, " "); got != "$0 $0.20 $0.40 $0.60 $0.80 $1.00" {
		t.Errorf("cost ticks %s", got)
	}
	page := renderFullHTML(t, runs...)
	seen := map[string]bool{}
	for _, m := range circleRe.FindAllStringSubmatch(page, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		if x-pointR <= v.Left {
			t.Errorf("a point at (%v, %v) touches the left axis, at %v", x, y, v.Left)
		}
		if y+pointR >= v.Bottom {
			t.Errorf("a point at (%v, %v) touches the bottom axis, at %v", x, y, v.Bottom)
		}
		if y-pointR < v.Top-pointR {
			t.Errorf("a point at (%v, %v) lies above the plot's top, %v", x, y, v.Top)
		}
		for spot := range seen {
			var sx, sy float64
			fmt.Sscan(spot, &sx, &sy)
			if math.Hypot(x-sx, y-sy) < pointR {
				t.Errorf("the point at (%v, %v) hides the one at (%v, %v)", x, y, sx, sy)
			}
		}
		seen[m[1]+" "+m[2]] = true
	}
	if len(seen) != 6 || !strings.Contains(page, "Points at the same place are spread") {
		t.Errorf("%d points shown, want 6", len(seen))
	}
	for _, m := range tickRe.FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], ".") && len(m[1])-strings.Index(m[1], ".") != 3 {
			t.Errorf("a cost tick %s without two decimals", m[1])
		}
	}
}

func TestUSDTick(t *testing.T) {
	for _, c := range []struct {
		cost, step float64
		want       string
	}{{0, 0.2, "$0"}, {0.2, 0.2, "$0.20"}, {1, 0.2, "$1.00"}, {0.005, 0.005, "$0.005"}, {20, 5, "$20.00"}, {0.05, 0.05, "$0.05"}} {
		if got := usdTick(c.cost, c.step); got != c.want {
			t.Errorf("usdTick(%v, %v) = %s, want %s", c.cost, c.step, got, c.want)
		}
	}
}

// TestHTMLHeatmapLeavesOutErrorsAndRepeatsNotRun: a task's cell is the mean of the repeats
// that ended, saying how many of how many; a task whose every repeat failed says "error", not
// a red 0.00; a run with no episode that ended badly but episodes not run says only that.
func TestHTMLHeatmapLeavesOutErrorsAndRepeatsNotRun(t *testing.T) {
	r := writeRun(t, t.TempDir(), "openai/gpt-5.5", []string{"Scenario-1", "Scenario-2", "Scenario-3"}, 2,
		result("Scenario-1", 1, "ok", 1, 0.1), result("Scenario-1", 2, "error", 0, 0.1),
		result("Scenario-2", 1, "error", 0, 0.1), result("Scenario-2", 2, "error", 0, 0.1),
		result("Scenario-3", 1, "ok", 1, 0.1))
	cells := map[string]string{}
	for _, row := range heatChart([]*Run{r}, []string{"R1"}, sizes[0]).Rows {
		cells[row.Label] = row.Cells[0].Text
		if row.Label == "Scenario-2" && row.Cells[0].Fill != errorFill {
			t.Errorf("the error cell is coloured %s", row.Cells[0].Fill)
		}
	}
	if want := map[string]string{"Scenario-1": "1.00 (1/2)", "Scenario-2": "error", "Scenario-3": "1.00 (1/2)"}; fmt.Sprint(cells) != fmt.Sprint(want) {
		t.Errorf("heatmap cells %v, want %v", cells, want)
	}

	ok := writeRun(t, t.TempDir(), "openai/gpt-5.5", []string{"Scenario-1"}, 3, result("Scenario-1", 1, "ok", 1, 0.1))
	page := renderHTML(t, ok)
	if strings.Contains(page, "<p>None.</p>") || !strings.Contains(page, "2 episodes not run yet") {
		t.Errorf("a run with episodes not run but none that ended badly:\n%s", page[strings.Index(page, "Episodes that did not end ok"):])
	}
}
