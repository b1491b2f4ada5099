package runfolder

import (
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
)

// TestCollect: episodes never recorded count as unfinished, and every episode of the plan
// counts in the summary.
func TestCollect(t *testing.T) {
	done := map[Episode]Result{
		{Task: "Scenario-1", Repeat: 1}: {Task: "Scenario-1", Repeat: 1, Status: "ok", Score: 0.5, TP: 1, FP: 1, RootCauses: 1, RootCausesFound: 1, Matcher: "judge"},
		{Task: "Scenario-2", Repeat: 1}: {Task: "Scenario-2", Repeat: 1, Status: "max_turns", Turns: 100},
	}
	all, summary := Collect(Shard{}.Episodes([]string{"Scenario-1", "Scenario-2"}, 2), done, "")
	if len(all) != 4 {
		t.Errorf("collected %d episodes, want 4", len(all))
	}
	if summary.Episodes != 4 {
		t.Errorf("a summary of %d episodes, want 4", summary.Episodes)
	}
	if summary.Score != 0.125 {
		t.Errorf("score %v, want 0.125", summary.Score)
	}

	for _, i := range []int{1, 3} {
		if all[i].Status != grader.StatusUnfinished || !strings.Contains(all[i].Error, "not run") {
			t.Errorf("episode %s/%d never recorded: %+v", all[i].Task, all[i].Repeat, all[i])
		}
	}
}
