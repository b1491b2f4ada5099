package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// gradeOptions are the flags of aa-grade grade.
type gradeOptions struct {
	flagsSet
	dataset  string
	tasks    []string
	allTasks bool
	repeats  int
	json     bool
	parallel int
	judge    judgeOptions
}

func (o *gradeOptions) flags() []cli.Flag {
	return append([]cli.Flag{
		datasetFlag(&o.dataset), tasksFlag(&o.tasks),
		&cli.BoolFlag{Name: "all-tasks", Destination: &o.allTasks,
			Usage: "grade every task of the dataset, those the answers do not cover as missing (default: the tasks " +
				"the answers cover, saying how many of the dataset's that is)"},
		&cli.IntFlag{Name: "repeats", Destination: &o.repeats, Sources: env("repeats"),
			DefaultText: "for a RUN, the run's; else the largest repeat found", Usage: "repeats per task to score"},
		jsonFlag(&o.json, "print the result as JSON"),
		&cli.IntFlag{Name: "parallel", Value: 4, Destination: &o.parallel, Sources: env("judge-parallel"),
			Usage: "judge calls at once"},
	}, o.judge.flags()...)
}

func (o *gradeOptions) Validate() error {
	// 0 is the default's value, "as many as found": given, it is refused as run refuses it.
	if o.repeats < 0 || o.repeats > grader.MaxRepeats || (o.isSet("repeats") && o.repeats == 0) {
		return usageErrorf("--repeats %d: must be 1 to %d (leave it out for as many as found)", o.repeats, grader.MaxRepeats)
	}
	if o.parallel < 1 {
		return usageErrorf("--parallel %d: must be 1 or more", o.parallel)
	}
	if o.allTasks && o.isSet("tasks") {
		return usageErrorf("--all-tasks and --tasks: give one (every task of the dataset, or these)")
	}
	return o.judge.Validate()
}

func newGradeCommand() *cli.Command {
	var opts gradeOptions
	return &cli.Command{
		Name:      "grade",
		Usage:     "score diagnoses written by any agent, as the leaderboard does",
		ArgsUsage: "SUBMISSIONS|RUN",
		Description: "SUBMISSIONS is a folder laid out <task-id>/<repeat>.json or " +
			"<task-id>/<repeat>/agent_output.json (repeats numbered from 1; a number above 1000 is ignored, with a warning).\n" +
			"The tasks the answers cover are scored (--tasks: these; --all-tasks: every task of the dataset),\n" +
			"each task x repeat; a repeat with no file scores 0 as missing.\n" +
			"A folder of ATIF trajectories (<task>/<repeat>/trajectory.json as aa-grade export writes them, or a\n" +
			"Harbor job's <trial>/agent/trajectory.json) is graded by each trajectory's final answer (docs/formats.md).\n" +
			"RUN is a run folder of aa-grade run: its submissions are graded again, episodes without one keep\n" +
			"the status the run recorded, --dataset and --repeats default to the run's (a Hub dataset at the\n" +
			"commit the run recorded; give --dataset hf:REPO@main for the ground truths as they are now), and\n" +
			"only the run's tasks are graded (--tasks: those of them).\n\n" +
			"For a Hub dataset only the index (sre/data.jsonl, with the ground truths) is downloaded.\n\n" +
			"With --judge MODEL, a model maps entities to ground-truth groups as in the official grading; " +
			"its answers are cached in $XDG_CACHE_HOME/aa-grade/judge.\n\n" +
			"Exit 1 when a task cannot be graded; 3 when a submission cannot be read (permissions, a disk\n" +
			"error) or the judge failed on every episode.\n\n" +
			"Example: aa-grade grade --dataset ./ITBench-AA ./my-agent-outputs",
		Flags:  opts.flags(),
		Action: action(&opts, runGrade),
	}
}

// gradeOutput is `grade --json`: the summary schema plus the problems met on the way.
type gradeOutput struct {
	grader.Summary
	Problems []grader.Problem `json:"problems,omitempty"`
}

func runGrade(ctx context.Context, opts gradeOptions, args []string, con console) error {
	if len(args) != 1 {
		return usageErrorf("grade needs one SUBMISSIONS folder, got %s; see aa-grade grade --help",
			english.Count(len(args), "argument"))
	}
	j, err := newJudge(opts.judge)
	if err != nil {
		return err
	}
	in, err := openGradeInput(ctx, args[0], opts.dataset, opts.isSet("dataset"))
	if err != nil {
		return err
	}
	defer in.close()
	if err := in.keepTasks(opts.tasks, opts.allTasks); err != nil {
		return err
	}
	repeats, problems := opts.repeats, in.problems
	if repeats == 0 && in.run != nil {
		repeats = in.run.Header.Repeats
	}
	gradeOpts := grader.GradeOptions{Repeats: repeats, Parallel: opts.parallel}
	if j != nil {
		if in.run != nil { // the run's verdicts, when the same judge and prompt graded it
			j.ReadDirs = append(j.ReadDirs, filepath.Join(in.run.Dir, runfolder.JudgeDir))
		}
		gradeOpts.Scorer = j.Score
	}
	results, gradeProblems, err := in.grade(ctx, gradeOpts)
	if err != nil {
		return err
	}
	out := gradeOutput{Summary: grader.Summarise(results), Problems: append(problems, gradeProblems...)}
	if j != nil {
		out.Judge = grader.JudgeSummary(j.Model, results)
		if p := judgeFallbacks(out.Summary); p != nil {
			out.Problems = append(out.Problems, *p)
		}
	}

	for _, p := range out.Problems {
		printLine(con.err, "%s: %s", p.Level, p.Message)
	}
	if j != nil {
		fmt.Fprintln(con.err, j.spent())
	}
	if opts.json {
		if err := printJSON(con.out, out); err != nil {
			return err
		}
	} else {
		renderGradeText(con.out, out.Summary)
	}
	if err := judgeFailedEverywhere(out.Summary); err != nil {
		return err
	}
	if n := countLevel(out.Problems, "error"); n > 0 {
		return badResult(fmt.Errorf("%s could not be graded; see the errors above", english.Count(n, "task")))
	}
	return nil
}

// gradeInput is what grade and analyze read of a SUBMISSIONS|RUN argument: the run (nil for
// a folder of submissions), the dataset whose ground truths apply, the submissions, and what
// was noticed on the way.
type gradeInput struct {
	dir      string
	run      *runfolder.Run
	ds       *data.Dataset
	subs     grader.SubmissionFiles
	problems []grader.Problem
	tmp      string // the answers taken out of ATIF trajectories, removed by close
	// sources name, for each file in tmp, the trajectory and step its answer comes from: the
	// messages that name a file name that instead.
	sources map[string]string
	atif    atif.Found // the ATIF trajectories the answers were taken from, for analyze
}

// openGradeInput reads dir as a run folder, or else as a folder of submissions, and opens the
// dataset (only its index): for a run, the one it ran on (at its recorded commit) unless
// datasetSet, and only its tasks.
func openGradeInput(ctx context.Context, dir, dataset string, datasetSet bool) (*gradeInput, error) {
	// Checked before a dataset is fetched for nothing.
	if info, err := os.Stat(dir); err != nil {
		return nil, usageError(err)
	} else if !info.IsDir() {
		return nil, usageErrorf("%s is a file; give a folder of submissions or a run folder", dir)
	}
	in := &gradeInput{dir: dir}
	var tasks []string // a run's tasks
	switch r, err := runfolder.Read(dir); {
	case err == nil:
		in.run, tasks = r, r.Header.Tasks
		if !datasetSet {
			dataset = recordedDataset(r.Header) // the ground truths the run was scored on
		}
	case !errors.Is(err, runfolder.ErrNotRunFolder): // else a folder of submissions
		return nil, err
	}
	ds, err := data.Open(ctx, dataset, data.OpenOptions{Hub: hubConfig(), IndexOnly: true, Tasks: tasks})
	if err != nil {
		return nil, datasetError(err)
	}
	in.ds = ds
	if in.run != nil {
		in.subs, in.problems, err = in.run.Submissions()
	} else if in.subs, in.problems, err = grader.FindSubmissions(dir); err == nil && len(in.subs) == 0 {
		err = in.readATIF()
	}
	switch {
	case err != nil || in.run != nil || len(in.subs) > 0:
	case in.tmp != "":
		err = noATIFAnswer(dir, in.problems)
	default:
		err = noSubmissions(dir, in.problems)
	}
	if err != nil {
		in.close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageError(err)
		}
		return nil, err
	}
	if in.run != nil {
		for _, w := range in.run.Warnings {
			in.problems = append(in.problems, grader.Problem{Level: "warning", Message: w})
		}
	}
	for _, w := range ds.Warnings {
		in.problems = append(in.problems, grader.Problem{Level: "warning", Message: w})
	}
	return in, nil
}

// keepTasks narrows the tasks graded: to those asked for (tasks; a run's must be among its
// own), else, for answers from elsewhere and unless all, to the tasks they cover, with a
// warning that says how many of the dataset's that is. The default is the tasks covered
// because a partial set of answers (a Harbor job of two tasks) is asked about those tasks:
// scored over the whole dataset it would be mostly "missing" zeros and still exit 0, a score
// that means nothing; a full evaluation gives --all-tasks, or reads the warning.
func (in *gradeInput) keepTasks(tasks []string, all bool) error {
	if len(tasks) > 0 {
		if in.run != nil {
			var other []string
			for _, id := range tasks {
				if !slices.Contains(in.run.Header.Tasks, data.TaskFolder(id)) {
					other = append(other, id)
				}
			}
			if len(other) > 0 {
				return usageErrorf("--tasks %s: not tasks of the run in %s (its tasks: %s)", strings.Join(other, ","),
					in.dir, data.DescribeIDs(in.run.Header.Tasks))
			}
		}
		if err := in.ds.KeepTasks(tasks); err != nil {
			return usageErrorf("--tasks: %w", err)
		}
		return nil
	}
	if in.run != nil || all {
		return nil
	}
	var covered []data.Task
	for i, t := range gradeTasks(in.ds) {
		if in.subs.Covers(t) {
			covered = append(covered, in.ds.Tasks[i])
		}
	}
	switch n := len(in.ds.Tasks); {
	case len(covered) == 0:
		return usageErrorf("the answers in %s are for none of the %s of %s; give the dataset they answer (--dataset)",
			in.dir, english.Count(n, "task"), in.ds.Spec)
	case len(covered) < n:
		in.problems = append(in.problems, grader.Problem{Level: "warning", Message: fmt.Sprintf(
			"the answers cover %d of the %s of %s: graded over those %d (--all-tasks grades the other %d as missing)",
			len(covered), english.Count(n, "task"), in.ds.Spec, len(covered), n-len(covered))})
		in.ds.Tasks = covered
	}
	return nil
}

// readATIF takes the answers of the ATIF trajectories in the folder, when it holds some
// (atif.Find's layouts) and no submissions: each trajectory's diagnosis is written out in the
// submissions' layout, into a folder of its own that close removes.
func (in *gradeInput) readATIF() error {
	found, err := atif.Find(in.dir)
	if err != nil || len(found.Episodes) == 0 {
		return err
	}
	tmp, err := os.MkdirTemp("", "aa-grade-atif-")
	if err != nil {
		return err
	}
	in.tmp, in.atif = tmp, found
	var unread []string
	in.sources, unread, err = atif.WriteSubmissions(found, tmp)
	if err != nil {
		return err
	}
	in.problems = nil // the submissions' layout's complaints: the folder is in another
	for _, p := range append(found.Problems, unread...) {
		in.problems = append(in.problems, grader.Problem{Level: "warning", Message: p})
	}
	subs, problems, err := grader.FindSubmissions(tmp)
	in.subs, in.problems = subs, append(in.problems, problems...)
	return err
}

// nameSources makes the reasons and problems that name a file of answers taken out of an ATIF
// trajectory name the trajectory and step instead.
func (in *gradeInput) nameSources(results []grader.TaskResult, problems []grader.Problem) {
	rename := func(s string) string {
		if in.tmp == "" || !strings.Contains(s, in.tmp) {
			return s
		}
		for file, src := range in.sources {
			s = strings.ReplaceAll(s, file, src)
		}
		return s
	}
	for _, t := range results {
		for i := range t.Episodes {
			t.Episodes[i].Reason = rename(t.Episodes[i].Reason)
		}
	}
	for i := range problems {
		problems[i].Message = rename(problems[i].Message)
	}
}

// close removes what reading the input made (the answers taken out of ATIF trajectories).
func (in *gradeInput) close() {
	if in.tmp != "" {
		_ = os.RemoveAll(in.tmp) // best effort: a temporary folder, which the system cleans too
	}
}

// grade scores the submissions against the dataset; a run's episodes without one keep the
// status the run recorded.
func (in *gradeInput) grade(
	ctx context.Context,
	opts grader.GradeOptions,
) ([]grader.TaskResult, []grader.Problem, error) {
	results, problems, err := grader.GradeSubmissions(ctx, gradeTasks(in.ds), in.subs, opts)
	if errors.Is(err, context.Canceled) {
		return nil, nil, interrupted(errors.New("interrupted"))
	}
	if err != nil {
		return nil, nil, err
	}
	in.nameSources(results, problems)
	if in.run != nil {
		in.run.KeepStatuses(results)
		if results, err = inShard(in.run.Header, results, opts.Repeats); err != nil {
			return nil, nil, err
		}
	}
	return results, problems, nil
}

// inShard keeps, of a sharded run's graded tasks, the episodes its shard played (of repeats
// per task): the other shards' episodes are not missing, they are in other folders.
func inShard(h runfolder.Header, results []grader.TaskResult, repeats int) ([]grader.TaskResult, error) {
	if h.Shard == "" {
		return results, nil
	}
	shard, err := runfolder.ParseShard(h.Shard)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", runfolder.ErrCorrupt, runfolder.HeaderFile, err)
	}
	played := map[runfolder.Episode]bool{}
	for _, e := range shard.Episodes(h.Tasks, repeats) {
		played[e] = true
	}
	var kept []grader.TaskResult
	for _, t := range results {
		t.Episodes = slices.DeleteFunc(t.Episodes, func(e grader.Episode) bool {
			return !played[runfolder.Episode{Task: t.Task, Repeat: e.Repeat}]
		})
		if len(t.Episodes) > 0 {
			kept = append(kept, t)
		}
	}
	return kept, nil
}

func gradeTasks(ds *data.Dataset) []grader.Task {
	tasks := make([]grader.Task, 0, len(ds.Tasks))
	for _, t := range ds.Tasks {
		gt := grader.Task{ID: t.ID, GroundTruth: t.GroundTruth}
		if t.Row != nil && t.Row.IDAA != "" {
			gt.AltIDs = []string{t.Row.IDAA}
		}
		tasks = append(tasks, gt)
	}
	return tasks
}

func countLevel(problems []grader.Problem, level string) int {
	n := 0
	for _, p := range problems {
		if p.Level == level {
			n++
		}
	}
	return n
}

// renderGradeText prints one row per task (the score of each repeat, or its status when it
// was not graded), the headline, and a line for each episode not graded or graded without
// the entities past grader.MaxEntities.
func renderGradeText(w io.Writer, s grader.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"TASK"}
	for r := 1; r <= s.Repeats; r++ {
		header = append(header, fmt.Sprintf("R%d", r))
	}
	header = append(header, "MEAN")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	var notes []string
	statuses := map[string]int{}
	for _, t := range s.PerTask {
		// Each repeat in its own column, blank where the results have none of it.
		row := make([]string, s.Repeats+1)
		row[0] = termtext.Sanitize(t.Task)
		for _, e := range t.Episodes {
			statuses[e.Status]++
			if e.Repeat < 1 || e.Repeat > s.Repeats {
				continue
			}
			if e.Status != grader.StatusOK {
				row[e.Repeat] = termtext.Sanitize(e.Status)
				if e.Status != grader.StatusMissing {
					notes = append(notes, episodeNote(t.Task, e))
				}
				continue
			}
			row[e.Repeat] = fmt.Sprintf("%.2f", e.Score)
			if note := grader.DroppedNote(e.EntitiesDropped); note != "" {
				notes = append(notes, fmt.Sprintf("%s repeat %d: %s", t.Task, e.Repeat, note))
			}
		}
		row = append(row, fmt.Sprintf("%.3f", t.Score))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if s.Episodes != s.Tasks*s.Repeats {
		fmt.Fprintln(w, report.PartialNote)
	}
	fmt.Fprintf(w, "Score %.3f over %s; 95%% CI %s\n", s.Score, s.Extent(), grader.FormatCI(s.CI95))
	fullRecall := fmt.Sprintf("Full recall in %.1f%% of episodes", 100*s.FullRecallRate)
	if s.FullRecallPrecision != nil {
		fullRecall += fmt.Sprintf("; mean precision of those %.3f", *s.FullRecallPrecision)
	}
	fmt.Fprintln(w, fullRecall)
	if s.Judge != nil {
		printLine(w, "%s", judgeLine(s.Judge))
	}
	var counts []string
	for _, st := range []string{grader.StatusOK, grader.StatusMissing, grader.StatusInvalid, grader.StatusNoSubmission,
		grader.StatusMaxTurns, grader.StatusOutputLimit, grader.StatusContextOverflow, grader.StatusInvalidArguments,
		grader.StatusRefusedLimit, grader.StatusError, grader.StatusCostLimit, grader.StatusUnfinished} {
		if statuses[st] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", statuses[st], st))
		}
	}
	if len(counts) > 0 {
		fmt.Fprintf(w, "Episodes: %s\n", strings.Join(counts, ", "))
	}
	for _, n := range notes {
		printLine(w, "%s", n)
	}
}

// episodeNote says why an episode was not graded: its status, and the reason when there is
// one (a max_turns episode needs none).
func episodeNote(task string, e grader.Episode) string {
	note := fmt.Sprintf("%s repeat %d %s", task, e.Repeat, e.Status)
	if e.Reason != "" {
		note += ": " + e.Reason
	}
	return note
}

// noSubmissions refuses a folder in which nothing is a submission, naming the layouts read
// and what was ignored: a wrong folder, never a score of 0.
func noSubmissions(dir string, problems []grader.Problem) error {
	var ignored []string
	for _, p := range problems {
		if p.Ignored != "" {
			ignored = append(ignored, p.Ignored)
		}
	}
	what := "none of its files is one"
	if len(ignored) > 0 {
		listed := strings.Join(ignored[:min(len(ignored), 5)], ", ")
		if len(ignored) > 5 {
			listed += ", ..."
		}
		what = fmt.Sprintf("%s ignored (%s)", english.Count(len(ignored), "file"), listed)
	}
	return usageErrorf("no submission in %s: %s; expected %s, ATIF trajectories (%s, or %s), or a run folder",
		dir, what, grader.SubmissionLayouts, atif.LayoutEpisodes, atif.LayoutHarbor)
}

// noATIFAnswer refuses a folder of ATIF trajectories none of which gave an answer, saying why
// for the first few.
func noATIFAnswer(dir string, problems []grader.Problem) error {
	var why []string
	for _, p := range problems[:min(len(problems), 3)] {
		why = append(why, p.Message)
	}
	if len(problems) > 3 {
		why = append(why, fmt.Sprintf("and %d more", len(problems)-3))
	}
	return usageErrorf("no answer in the ATIF trajectories of %s: %s", dir, strings.Join(why, "; "))
}
