// Package viewer shows run folders to people: a page comparing runs (score and interval,
// episodes by status, cost, a task x repeat grid) and a page per episode (the conversation
// turn by turn, each command with its exit code and output, the submission with each
// entity's verdict). It serves them on loopback while a run goes on (aa-grade view) and writes
// them as static files to share (--out).
//
// Everything in a run folder is untrusted (a model's commands and their output, task ids, a
// folder someone sent): pages are html/template, with control characters shown rather than
// passed on; they load nothing (their CSS and script are inline, allowed by hash, and a
// Content-Security-Policy forbids the rest); only the folders given are served, through
// os.Root, and only the episodes their runs name.
package viewer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// Options say where what a run folder does not hold comes from.
type Options struct {
	// GroundTruth returns the ground truth of each task of a run (the task's YAML document
	// by task id), to grade the submissions entity by entity; nil, or an error, shows the
	// submissions without verdicts, saying why.
	GroundTruth func(ctx context.Context, h runfolder.Header) (map[string][]byte, error)
	// Network says the viewer is served beyond loopback (view --host): requests naming any
	// host are answered, not only those naming this machine's loopback.
	Network bool
}

// Viewer serves the run folders and the ATIF trajectories it was given, and nothing else.
type Viewer struct {
	runs         []*source
	trajectories []*trajectories
	opts         Options
}

// source is one run folder given to the viewer.
type source struct {
	n    int    // its number in the pages' paths, from 1
	dir  string // as given
	root *os.Root

	truthOnce sync.Once
	truth     map[string]*grader.GroundTruth
	truthErr  string // why the ground truth is missing, for the page
}

// New opens the run folders dirs, each of which must hold a run (runfolder.ErrNotRunFolder,
// runfolder.ErrCorrupt otherwise), and the ATIF trajectories of another harness (or aa-grade's
// export) at the paths documents: a folder in one of atif.FindDocuments's layouts (a Harbor
// job among them), or one document.
func New(dirs, documents []string, opts Options) (*Viewer, error) {
	v := &Viewer{opts: opts}
	for i, p := range documents {
		found, err := atif.FindDocuments(p)
		if err == nil && len(found.Episodes) == 0 {
			err = fmt.Errorf("no ATIF trajectory (%s, %s or %s)", atif.LayoutEpisodes, atif.LayoutHarbor, atif.LayoutFiles)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		v.trajectories = append(v.trajectories, &trajectories{n: i + 1, path: p})
	}
	for i, dir := range dirs {
		if _, err := runfolder.ReadHeader(dir); err != nil {
			_ = v.Close() // folder handles, read only: the error above is the one to tell
			return nil, err
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			_ = v.Close() // as above
			return nil, fmt.Errorf("open the run folder: %w", err)
		}
		v.runs = append(v.runs, &source{n: i + 1, dir: dir, root: root})
	}
	if len(v.runs)+len(v.trajectories) == 0 {
		return nil, errors.New("no run folder or trajectories given")
	}
	return v, nil
}

// Close releases the run folders.
func (v *Viewer) Close() error {
	var errs []error
	for _, s := range v.runs {
		errs = append(errs, s.root.Close())
	}
	return errors.Join(errs...)
}

// loaded is a run as one page request reads it: the folder may change between requests (a
// run going on).
type loaded struct {
	*source
	run     *report.Run
	live    bool
	eps     []episodeRef              // in the run's order: tasks, then repeats
	byPath  map[string]int            // page path -> index in eps
	index   map[runfolder.Episode]int // episode -> index in eps
	results map[runfolder.Episode]runfolder.Result
	// prompts is the set the run used, to take its shell results apart; promptsProblem says
	// why it could not be read (the built-in set's words are tried then).
	prompts        *promptset.Set
	promptsProblem string
}

// episodeRef is one task x repeat of a run and where its page is.
type episodeRef struct {
	Task   string
	Repeat int
	Path   string // of its page, from the root of the pages
	seg    string // the task's path segment
}

// safeSegment is a task id that can name a folder as it is, in a URL and on any disk.
var safeSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$`)

// load reads a run folder as it stands.
func (s *source) load() (*loaded, error) {
	r, err := report.Load(s.dir)
	if err != nil {
		return nil, err
	}
	l := &loaded{source: s, run: r, live: running(s.dir), byPath: map[string]int{}, index: map[runfolder.Episode]int{},
		results: map[runfolder.Episode]runfolder.Result{}}
	for _, res := range r.Results {
		l.results[res.Episode()] = res
	}
	if l.prompts, err = runfolder.ReadPrompts(s.dir, r.Header.PromptSHA256); err != nil {
		l.promptsProblem = fmt.Sprintf("%v: shell results are shown as the model read them", err)
	}
	for ti, t := range r.Summary.PerTask {
		seg := t.Task
		if !safeSegment.MatchString(seg) {
			seg = "task-" + strconv.Itoa(ti+1) // a hostile or odd id never names a path
		}
		for _, e := range t.Episodes {
			ref := episodeRef{Task: t.Task, Repeat: e.Repeat, seg: seg,
				Path: fmt.Sprintf("runs/%d/%s/%d.html", s.n, seg, e.Repeat)}
			l.byPath[ref.Path] = len(l.eps)
			l.index[runfolder.Episode{Task: t.Task, Repeat: e.Repeat}] = len(l.eps)
			l.eps = append(l.eps, ref)
		}
	}
	return l, nil
}

// dir is the episode's folder inside the run folder, for its os.Root. Task ids come from the
// run's own files and are used only after they are found there; os.Root refuses any that
// would lead out of the folder all the same.
func (e episodeRef) dir() string {
	return runfolder.EpisodesDir + "/" + e.Task + "/" + strconv.Itoa(e.Repeat)
}

// groundTruth reads the run's ground truths once, on the first page that grades a
// submission.
func (s *source) groundTruth(
	ctx context.Context,
	h runfolder.Header,
	get func(context.Context, runfolder.Header) (map[string][]byte, error),
) (map[string]*grader.GroundTruth, string) {
	s.truthOnce.Do(func() {
		if get == nil {
			s.truthErr = "no ground truth was given to the viewer"
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		docs, err := get(ctx, h)
		if err != nil {
			s.truthErr = fmt.Sprintf("the ground truth of dataset %s could not be read: %v", h.Dataset, err)
			return
		}
		s.truth = map[string]*grader.GroundTruth{}
		for task, doc := range docs {
			if gt, err := grader.ParseGroundTruth(doc); err == nil {
				s.truth[task] = gt
			}
		}
	})
	return s.truth, s.truthErr
}
