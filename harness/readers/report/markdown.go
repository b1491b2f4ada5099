package report

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/internal/english"
)

// WriteMarkdown writes report.md: the run's headline, its episodes, cost and tasks, and the
// published leaderboard beside it.
func WriteMarkdown(w io.Writer, r *Run) error {
	bw := bufio.NewWriter(w)
	o := r.Overview()
	h := r.Header
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("# ITBench-AA run: %s\n\n", mdText(h.Model, 200))
	p("- Dataset: %s, %s x %s", mdText(h.Dataset, 200), english.Count(o.Tasks, "task"), english.Count(o.Repeats, "repeat"))
	if o.Shard != "" {
		p(", shard %s", mdText(o.Shard, 20))
	}
	p("\n")
	p("- Started %s by aa-grade %s; sandbox %s, at most %s, prompt sha256 %s\n\n",
		h.Started.UTC().Format("2006-01-02 15:04 MST"), mdText(h.Version, 40), mdText(h.Sandbox, 40),
		english.Count(h.MaxTurns, "turn"), mdText(h.PromptSHA256, 64))
	if o.ModelParams != "" {
		p("- Model parameters: %s\n\n", mdText(o.ModelParams, 400))
	}
	if o.Caveat != "" {
		p("**%s**\n\n", o.Caveat)
	}

	p("## Score\n\n**%.3f**%s over %s; 95%% CI %s. ", o.Score, o.SoFar(), o.Extent(), o.CIText())
	if o.Partial() {
		p("%s ", PartialNote)
	}
	p("Full recall in %.1f%% of episodes", 100*r.Summary.FullRecallRate)
	if fp := r.Summary.FullRecallPrecision; fp != nil {
		p("; mean precision of those %.3f", *fp)
	}
	p(".\n\nGrading: %s.\n\n", mdText(o.Agreement(), 400))

	p("## Episodes by status\n\n| status | episodes |\n|---|---:|\n")
	for _, st := range statusOrder(o.Statuses) {
		p("| %s | %d |\n", mdText(st, 40), o.Statuses[st])
	}
	if o.NotRun > 0 {
		p("| not run yet | %d |\n", o.NotRun)
	}
	p("\n")
	for _, e := range r.Results {
		if e.Status != grader.StatusOK && e.Error != "" {
			p("- %s repeat %d, %s: %s\n", mdText(e.Task, 80), e.Repeat, mdText(e.Status, 40), mdText(e.Error, 300))
		}
	}
	if o.Errors > 0 {
		p("\n%s in error or not run: run the same `aa-grade run` command again to play them.\n",
			english.Count(o.Errors, "episode"))
	}

	p("\n## Cost\n\n")
	if o.CostUSD == nil {
		p("Unknown: the run has no prices for its model (tokens below).\n\n")
	} else {
		p("%s in total; %s per task (the mean of an episode).\n\n", FormatUSD(o.CostUSD), FormatUSD(o.CostPerTask))
	}
	p("%s\n\n", o.SpendNote())
	p("Tokens: %s input (%s cached reads, %s cached writes), %s output (%s reasoning); %.1f turns per episode.\n\n",
		english.Number(o.Tokens.Input), english.Number(o.Tokens.CachedRead), english.Number(o.Tokens.CachedWrite),
		english.Number(o.Tokens.Output), english.Number(o.Tokens.Reasoning), o.MeanTurns)

	p("## Per task\n\n")
	p("| task | score | episodes | mean turns | mean tool calls | input tokens | cached read | cached write | output " +
		"tokens | reasoning tokens | cost |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range r.PerTask() {
		p("| %s | %.3f | %d | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", mdText(t.Task, 80), t.Score, t.Episodes,
			t.MeanTurns, t.MeanToolCalls, english.Number(t.Tokens.Input), english.Number(t.Tokens.CachedRead),
			english.Number(t.Tokens.CachedWrite), english.Number(t.Tokens.Output), english.Number(t.Tokens.Reasoning),
			FormatUSD(t.CostUSD))
	}

	writeBoardMarkdown(bw, o)
	if r.AnalysisErr != nil {
		fmt.Fprintf(bw, "\n## Analysis\n\nLeft out: %s\n", mdText(r.AnalysisErr.Error(), 300))
	}
	if r.Analysis != nil {
		writeAnalysisMarkdown(bw, r.Analysis)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report.md of %s: %w", r.Dir, err)
	}
	return nil
}

// statusOrder lists the statuses present, in the order of docs/design.md, then any other.
func statusOrder(counts map[string]int) []string {
	known := []string{grader.StatusOK, grader.StatusMaxTurns, grader.StatusNoSubmission, grader.StatusOutputLimit,
		grader.StatusContextOverflow, grader.StatusInvalidArguments, grader.StatusRefusedLimit, grader.StatusInvalid,
		grader.StatusMissing, grader.StatusError, grader.StatusCostLimit}
	var out []string
	for _, st := range known {
		if counts[st] > 0 {
			out = append(out, st)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(known, st) {
			out = append(out, st)
		}
	}
	return out
}

// mdText makes untrusted text inert inside a Markdown line or table cell: one line, and the
// characters that open inline Markdown, HTML or a cell backslash-escaped.
func mdText(s string, limit int) string {
	var b strings.Builder
	for _, r := range OneLine(s, limit) {
		if strings.ContainsRune("\\`*_[]<>|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeBoardMarkdown ranks a run of ITBench-AA's tasks among the published rows; a run of
// other tasks is shown alone, with why.
func writeBoardMarkdown(w io.Writer, o Overview) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	published := o.OtherTasks == ""
	if published {
		p("\n## Beside the published leaderboard\n\n%s This run: %s.\n\n", SubsetNote, english.Count(o.Tasks, "task"))
	} else {
		p("\n## Leaderboard\n\nNot ranked against the published leaderboard: %s; %s.\n\n",
			mdText(o.OtherTasks, 400), OtherTasksNote)
	}
	p("| | model | tasks | score | avg turns | $/task |\n|---|---|---:|---:|---:|---:|\n")
	for _, b := range board([]Overview{o}, published) {
		if b.Published() {
			p("| published | %s | %d | %.3f | %s | %s |\n", mdText(b.Label, 120), b.Tasks, b.Score,
				formatOptional(b.AvgTurns, "%.0f"), formatOptional(b.CostPerTask, "$%.2f"))
			continue
		}
		p("| **this run** | **%s** | %d | **%s** | %.1f | %s |\n", mdText(b.Label, 120), b.Tasks, b.Standing(), *b.AvgTurns,
			FormatUSD(b.CostPerTask))
	}
	if published {
		p("\nPublished figures: %s.\n", leaderboard.Source)
	}
}
