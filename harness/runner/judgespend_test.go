package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// millionIn answers every question with a million input tokens used.
type millionIn struct{}

func (millionIn) Complete(context.Context, model.Request) (model.Reply, error) {
	return model.Reply{Message: model.Message{Content: "{}"}, Usage: model.Usage{Input: 1_000_000}}, nil
}

// TestJudgeCallsAreInTheLedger: the calls of the LLM judge grading a run's episodes (run
// --judge) are in the run's ledger of spend, each in the episode it graded, marked as the
// judge's and priced at the judge's prices, not the model's; the model's calls stay at the
// model's.
func TestJudgeCallsAreInTheLedger(t *testing.T) {
	var dir string
	results := runFake(t, &firstDies{started: 1}, func(cfg *Config) {
		dir = cfg.Folder.Dir
		cfg.Prices, cfg.JudgePrices = &model.Prices{Input: 1, Output: 1}, &model.Prices{Input: 3, Output: 3}
		cfg.Judge = "fake/judge"
		cfg.Scorer = func(ctx context.Context, task grader.Task, gt *grader.GroundTruth, names []string) (grader.Verdict, error) {
			asker := &models.Asker{Model: millionIn{}}
			if _, err := asker.Ask(ctx, "", "which group is "+strings.Join(names, ", ")+"?"); err != nil {
				return grader.Verdict{}, err
			}
			return grader.Rules(ctx, task, gt, names)
		}
	})
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	b, err := os.ReadFile(filepath.Join(dir, runfolder.SpendFile))
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]int{}
	var modelCalls int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c runfolder.Charge
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !c.Judge {
			modelCalls++
			if c.CostUSD == nil || *c.CostUSD != 0 {
				t.Errorf("a model call (no tokens) costs %v, want $0 at the model's prices", c.CostUSD)
			}
			continue
		}
		judged[c.Task]++
		if c.CostUSD == nil || *c.CostUSD != 3 {
			t.Errorf("the judge's call of a million input tokens costs %v, want $3 at the judge's prices: %s", c.CostUSD, line)
		}
	}
	if judged["Scenario-1"] != 1 || judged["Scenario-2"] != 1 {
		t.Errorf("the judge's calls in the ledger by episode: %v, want one each", judged)
	}
	if modelCalls != 4 {
		t.Errorf("%d model calls in the ledger, want 4 (2 turns of 2 episodes)", modelCalls)
	}
}
