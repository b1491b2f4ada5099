package viewer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// runsPage is the first page: the runs side by side and their episodes in one grid.
type runsPage struct {
	Runs []runColumn
	// Tasks are the rows of the grid: every task of any run, in the first run's order, then
	// the others'.
	Tasks []gridRow
	// Trajectories are the ATIF trajectories given beside the runs, each source a card and
	// a table.
	Trajectories []trajectoryCard
	Live         string // the page's version while a run goes on, for the refresh; "" otherwise
}

// buildIndex is the first page: the runs, then the ATIF trajectories. A source that can no
// longer be read (removed while the viewer runs) is named on its card, the rest shown.
func (v *Viewer) buildIndex(runs []*loaded) runsPage {
	p := buildRunsPage(runs)
	for _, s := range v.trajectories {
		c, err := s.card()
		if err != nil {
			c = trajectoryCard{N: s.n, Path: s.path, Problems: []string{err.Error()}}
		}
		p.Trajectories = append(p.Trajectories, c)
	}
	return p
}

// runColumn is one run: its numbers and its column group in the grid.
type runColumn struct {
	N        int
	Dir      string
	Overview report.Overview
	Header   runfolder.Header
	Statuses []statusCount
	Live     bool
	Warnings []string
	Repeats  int
	// Versus compares a run after the first with the first; nil for the first.
	Versus *report.Versus
}

type statusCount struct {
	Status string
	Count  int
}

// gridRow is one task: for each run its episodes and its score.
type gridRow struct {
	Task string
	Runs []gridRun
}

type gridRun struct {
	Has   bool // the run has this task
	Score float64
	Cells []cell
}

// cell is one episode in the grid.
type cell struct {
	Repeat int
	Href   string
	Status string
	Score  float64
	Class  string
	Title  string
}

// statusOrder lists statuses in the order the pages count them.
var statusOrder = []string{grader.StatusOK, grader.StatusMaxTurns, grader.StatusNoSubmission, grader.StatusOutputLimit,
	grader.StatusContextOverflow, grader.StatusInvalidArguments, grader.StatusRefusedLimit, grader.StatusInvalid,
	grader.StatusMissing, grader.StatusError, grader.StatusCostLimit, grader.StatusUnfinished}

func buildRunsPage(runs []*loaded) runsPage {
	var p runsPage
	rows := map[string]int{}
	reports := make([]*report.Run, len(runs))
	for i, l := range runs {
		reports[i] = l.run
	}
	overviews := report.Overviews(reports)
	for ri, l := range runs {
		o := overviews[ri]
		col := runColumn{N: l.n, Dir: l.dir, Overview: o, Header: l.run.Header, Live: l.live, Warnings: l.run.Warnings,
			Repeats: l.run.Summary.Repeats, Versus: o.VersusFirst}
		running := 0 // the grid's running episodes, which the card counts alike
		for _, t := range l.run.Summary.PerTask {
			i, ok := rows[t.Task]
			if !ok {
				i = len(p.Tasks)
				rows[t.Task] = i
				p.Tasks = append(p.Tasks, gridRow{Task: t.Task, Runs: make([]gridRun, len(runs))})
			}
			// Each episode under its repeat; a cell with no Href is one the run does not hold.
			g := gridRun{Has: true, Score: t.Score, Cells: make([]cell, col.Repeats)}
			for _, e := range t.Episodes {
				if e.Repeat < 1 || e.Repeat > col.Repeats {
					continue
				}
				ref := l.eps[l.index[runfolder.Episode{Task: t.Task, Repeat: e.Repeat}]]
				status := e.Status
				if status == grader.StatusUnfinished && l.live && l.hasPlainTrajectory(ref) {
					status = "running"
					running++
				}
				g.Cells[e.Repeat-1] = cell{Repeat: e.Repeat, Href: ref.Path, Status: status, Score: e.Score,
					Class: cellClass(status, e.Score),
					Title: fmt.Sprintf("%s repeat %d: %s, score %.2f", t.Task, e.Repeat, label(status), e.Score)}
			}
			p.Tasks[i].Runs[ri] = g
		}
		col.Statuses = statusCounts(o, running)
		p.Runs = append(p.Runs, col)
	}
	return p
}

// statusCounts counts a run's episodes by status, in statusOrder, those not run yet with the
// unfinished; running of these are running now, as the grid shows them.
func statusCounts(o report.Overview, running int) []statusCount {
	var counts []statusCount
	if running > 0 {
		counts = append(counts, statusCount{"running", running})
	}
	for _, st := range statusOrder {
		n := o.Statuses[st]
		if st == grader.StatusUnfinished {
			n += o.NotRun - running
		}
		if n > 0 {
			counts = append(counts, statusCount{st, n})
		}
	}
	return counts
}

// cellClass colours an episode: its score in five steps when graded, else its status.
func cellClass(status string, score float64) string {
	if status != grader.StatusOK {
		return "st-" + strings.ReplaceAll(status, "_", "-")
	}
	return "s" + strconv.Itoa(int(score*4+0.5))
}

// hasPlainTrajectory says the episode's trajectory is still being written (or was cut short).
func (l *loaded) hasPlainTrajectory(e episodeRef) bool {
	_, err := l.root.Stat(path.Join(e.dir(), runfolder.TrajectoryFile))
	return err == nil
}

// episodePage is one episode.
type episodePage struct {
	Run        runColumn
	Task       string
	Repeat     int
	Result     *runfolder.Result
	Status     string
	Running    bool
	Turns      []Turn
	Agent      *AgentEnd // an agent run's: how its agent ended
	Submission *Submission
	// Missed are the root causes the rules find the answer missed, once the episode ended.
	Missed     []missedCause
	Problems   []string
	Root       string // from the page to the root of the pages
	Prev, Next string // the neighbouring episodes' pages, "" at the ends
	Trajectory string // the raw trajectory's link, "" when there is none
	// TrajectoryFile is the raw trajectory's name in the episode folder.
	TrajectoryFile string
	Live           string // the page's version while the episode goes on, for the refresh
}

// trajectoryName is the raw trajectory file of an episode as the pages link it, beside its
// page: the compressed one of a finished episode, else the plain one; "" when there is none.
// One that is not a regular file inside the run folder (a link out of it, a FIFO) is an
// error.
func (l *loaded) trajectoryName(e episodeRef) (file, link string, err error) {
	for _, name := range []string{runfolder.TrajectoryFile + ".zst", runfolder.TrajectoryFile} {
		info, err := l.root.Stat(path.Join(e.dir(), name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", "", err
		case !info.Mode().IsRegular():
			return "", "", fmt.Errorf("%s: not a regular file", name)
		}
		return name, strconv.Itoa(e.Repeat) + "." + name, nil
	}
	return "", "", nil
}

func (v *Viewer) buildEpisodePage(ctx context.Context, l *loaded, i int) episodePage {
	e := l.eps[i]
	p := episodePage{Run: runColumn{N: l.n, Dir: l.dir, Header: l.run.Header}, Task: e.Task, Repeat: e.Repeat,
		Root: "../../../"}
	if i > 0 {
		p.Prev = p.Root + l.eps[i-1].Path
	}
	if i+1 < len(l.eps) {
		p.Next = p.Root + l.eps[i+1].Path
	}
	p.Status = grader.StatusUnfinished
	if r, ok := l.results[runfolder.Episode{Task: e.Task, Repeat: e.Repeat}]; ok {
		p.Result, p.Status = &r, r.Status
	}
	file, link, err := l.trajectoryName(e)
	if err != nil {
		p.Problems = append(p.Problems, fmt.Sprintf("open the trajectory: %v", err))
	}
	p.Running = l.live && file == runfolder.TrajectoryFile && (p.Result == nil || !p.Result.Final())
	if p.Running {
		p.Status = "running"
	}
	if l.promptsProblem != "" {
		p.Problems = append(p.Problems, l.promptsProblem)
	}
	if file != "" {
		p.Trajectory, p.TrajectoryFile = link, file
		f, err := runfolder.OpenTrajectoryIn(l.root, e.dir())
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("open the trajectory: %v", err))
		} else {
			turns, agent, problems := readTurns(f, l.prompts)
			f.Close()
			if p.Running && len(problems) > 0 && strings.Contains(problems[len(problems)-1], "cut short") {
				problems = problems[:len(problems)-1] // the line being written
			}
			p.Turns, p.Agent, p.Problems = turns, agent, append(p.Problems, problems...)
		}
	}
	truth, why := l.groundTruth(ctx, l.run.Header, v.opts.GroundTruth)
	gt := truth[e.Task]
	if gt == nil && why == "" {
		why = fmt.Sprintf("the dataset has no ground truth for %s", e.Task)
	}
	sub, err := readSubmission(l.root, e.dir(), gt, why)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		p.Problems = append(p.Problems, err.Error())
	case sub != nil && p.Result != nil && p.Result.Matcher == grader.MatcherJudge:
		sub.Decided = fmt.Sprintf(
			"The LLM judge graded this episode (score %.2f); the verdicts below are the deterministic rules'.", p.Result.Score)
		if p.Result.Rules != nil && len(p.Result.Rules.Disagreed) > 0 {
			sub.Decided += " The judge mapped these entities otherwise: " + strings.Join(p.Result.Rules.Disagreed, ", ") + "."
		}
	}
	p.Submission = sub
	if gt != nil && p.Result != nil && p.Result.Final() {
		var predictions []grader.Prediction
		if sub != nil && sub.Score != nil {
			predictions = sub.Score.Predictions
		}
		p.Missed = missedRootCauses(gt, predictions)
	}
	return p
}
