package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// costEstimate is what the episodes a run will play should cost, said before a paid run starts
// (and by --dry-run): the episodes times the published cost a task of the leaderboard row a
// preset reproduces; else, with prices, the prices times a token estimate (tokenEstimate: the
// folder's own mean, prev, on a resume, else the tokens of the preset of the nearest prices);
// else "unknown" and why. "" for a model that calls no paid API (the baseline, a replay).
func costEstimate(s models.Settings, episodes int, prev *runfolder.Run) string {
	if s.Spec == models.BaselineSpec || strings.HasPrefix(s.Spec, "replay/") {
		return ""
	}
	if perTask := publishedCost(s.Preset); perTask != nil {
		p, _ := provider.FindPreset(s.Preset)
		total := *perTask * float64(episodes)
		return fmt.Sprintf(
			"estimate: about $%.2f for %s at the published $%.2f a task of %s (the leaderboard's run; yours may differ)", total,
			english.Count(episodes, "episode"), *perTask, p.Label)
	}
	if s.Prices != nil {
		if e := s.Prices.Effective(); e.Input == 0 && e.Output == 0 && e.CachedRead == 0 && e.CachedWrite == 0 {
			return "estimate: $0 (the prices given make the model free)"
		}
		if e := tokenEstimate(*s.Prices, episodes, prev); e != "" {
			return e
		}
		return fmt.Sprintf(
			"estimate: unknown: %s has no published cost a task; the cost is counted from its prices as it is spent", s.Spec)
	}
	return fmt.Sprintf(
		"estimate: unknown: %s has no published cost a task and no prices (--price-input and --price-output give them)",
		s.Spec)
}

// publishedCost is the published cost a task of the leaderboard row the preset reproduces; nil
// for no preset, or a row that published none.
func publishedCost(preset string) *float64 {
	p, ok := provider.FindPreset(preset)
	if !ok {
		return nil
	}
	row, ok := leaderboard.Find(p.Label)
	if !ok {
		return nil
	}
	return row.CostPerTask
}

// pendingEpisodes splits the episodes of tasks x repeats (the shard's) into those to play and
// those prev, the run the folder holds (nil: none), finished.
func pendingEpisodes(
	tasks []data.Task,
	repeats int,
	shard runfolder.Shard,
	prev *runfolder.Run,
) (todo []runfolder.Episode, finished []runfolder.Result) {
	var done map[runfolder.Episode]runfolder.Result
	if prev != nil {
		done = prev.Results
	}
	return runfolder.Pending(shard.Episodes(taskIDs(tasks), repeats), done)
}

// taskIDs are the ids of tasks, in their order.
func taskIDs(tasks []data.Task) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

// dryRun says what run would play and what it should cost, and calls nothing: no provider, no
// sandbox, and it writes nothing (the dataset's index alone is read, and for a Hub dataset
// downloaded into the cache when it is not there).
func dryRun(ctx context.Context, w io.Writer, opts runOptions, p *preparedRun) error {
	plan, settings, out := p.plan, p.settings, p.out
	ds, err := data.Open(ctx, plan.dataset, data.OpenOptions{Hub: hubConfig(), Tasks: plan.tasks, IndexOnly: true})
	if err != nil {
		return datasetError(err)
	}
	prev, err := runfolder.Read(out)
	if err != nil {
		prev = nil // a new folder, or one run would refuse and say why
	}
	todo, finished := pendingEpisodes(ds.Tasks, plan.repeats, opts.shard, prev)
	size := english.Count(len(ds.Tasks), "task") + " x " + english.Count(plan.repeats, "repeat")
	what := size + " = " + english.Count(len(todo), "episode")
	if len(finished) > 0 { // "12 tasks x 3 repeats = 0 episodes" would hide the 36 of the folder
		what = fmt.Sprintf("%d of the %s of %s (%d already finished in %s)", len(todo),
			english.Count(len(todo)+len(finished), "episode"), size, len(finished), out)
	}
	printLine(w, "would run %s of %s with %s into %s", what, ds.Spec, describeModel(settings), out)
	printLine(w, "tasks: %s", strings.Join(taskIDs(ds.Tasks), ", "))
	if e := costEstimate(settings, len(todo), prev); e != "" {
		printLine(w, "%s", e)
	}
	for _, name := range p.needs {
		printLine(w, "needs: %s, which is not set; the run will need it", name)
	}
	return nil
}

// orZero is *v, or 0 for nil.
func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
