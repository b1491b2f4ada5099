package main

import (
	"cmp"

	"github.com/aa-grade/aa-grade/grader"
	"slices"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// runState is a run's progress as its events tell it: the episodes counted, the score and
// cost so far, the running episodes and what each does, what the ETA needs, and the rate
// limiter's warnings already shown. It prints nothing: runProgress renders it, as plain lines
// or a live block, and is what keeps it from being read and changed at once.
type runState struct {
	total    int
	finished int // episodes with a result, earlier runs of the folder included
	settled  int // those whose result stands (runfolder.Result.Final): a resume keeps them
	// scored counts the episodes whose score is in (every result but those stopped unfinished
	// or at the budget), scoreSum their scores.
	scored   int
	scoreSum float64
	// spend is what the run spent: the folder's ledger before it and each call since.
	// priced says the model's prices are known: until a call is answered, the spend of a run
	// without them is unknown, not $0.
	spend  runfolder.Spend
	priced bool
	// costPrior is the published cost a task, which projects the run's cost before any
	// episode has one (0: no projection until then).
	costPrior float64
	running   map[runfolder.Episode]*liveEpisode
	// most is the most episodes seen running at once: the run's parallelism, for the ETA;
	// ended and endedFor are the final episodes this process ran, and their time.
	most     int
	ended    int
	endedFor time.Duration
	stopBy   time.Time // after Ctrl-C, when the running episodes are stopped
	warned   int       // the rate limiter's warnings shown
}

// liveEpisode is what a running episode does.
type liveEpisode struct {
	started        time.Time
	turn, maxTurns int
	command        string
	retries        int
	wait           runner.Wait // the wait now; zero when none
	waitSince      time.Time
	retryLogged    time.Time // when plain output last had a line of its retries
}

func newRunState() *runState {
	return &runState{running: map[runfolder.Episode]*liveEpisode{}, priced: true}
}

// plan takes the run's size, the episodes already finished, and what the folder spent before
// (its ledger's sum).
func (s *runState) plan(total int, finished []runfolder.Result, spent runfolder.Spend) {
	s.total = total
	for _, r := range finished {
		s.count(r)
	}
	s.spend = spent
}

// charged takes a model call recorded in the ledger.
func (s *runState) charged(c runfolder.Charge) { s.spend.Add(c) }

// episode is a running episode's state; one not told started yet starts at now.
func (s *runState) episode(k runfolder.Episode, now time.Time) *liveEpisode {
	e := s.running[k]
	if e == nil {
		e = &liveEpisode{started: now}
		s.running[k] = e
		s.most = max(s.most, len(s.running))
	}
	return e
}

// start takes an episode that began at now.
func (s *runState) start(k runfolder.Episode, now time.Time) {
	s.running[k] = &liveEpisode{started: now}
	s.most = max(s.most, len(s.running))
}

// turn takes an episode's model call: it waits no more.
func (s *runState) turn(t runner.EpisodeTurn, now time.Time) {
	e := s.episode(t.Episode, now)
	e.turn, e.maxTurns, e.wait = t.Turn, t.MaxTurns, runner.Wait{}
	if t.Command != "" {
		e.command = t.Command
	}
}

// wait takes what an episode's model call waits for from now, and returns the wait it
// replaces and how long that lasted.
func (s *runState) wait(k runfolder.Episode, w runner.Wait, now time.Time) (was runner.Wait, lasted time.Duration) {
	e := s.episode(k, now)
	was, lasted = e.wait, now.Sub(e.waitSince)
	e.wait, e.waitSince = w, now
	if w.Retry {
		e.retries++
	}
	return was, lasted
}

// logRetry reports whether plain output should have a line for the retry an episode just
// began at now: its first, then one each every, so that a provider throttling every second
// gives an episode a line each interval, not one per attempt.
func (s *runState) logRetry(k runfolder.Episode, now time.Time, every time.Duration) bool {
	e := s.episode(k, now)
	if !e.retryLogged.IsZero() && now.Sub(e.retryLogged) < every {
		return false
	}
	e.retryLogged = now
	return true
}

// finish takes an episode's result.
func (s *runState) finish(r runfolder.Result) {
	delete(s.running, r.Episode())
	s.count(r)
	if r.Final() {
		s.ended++
		s.endedFor += time.Duration(r.Duration * float64(time.Second))
	}
}

// interrupt takes the time by which the running episodes are stopped after Ctrl-C.
func (s *runState) interrupt(stopBy time.Time) { s.stopBy = stopBy }

func (s *runState) count(r runfolder.Result) {
	s.finished++
	if r.Final() {
		s.settled++
	}
	if r.Status != grader.StatusUnfinished && r.Status != grader.StatusCostLimit {
		s.scored++
		s.scoreSum += r.Score
	}
}

// spent is the known spend in dollars, and whether it is all known.
func (s *runState) spent() (float64, bool) {
	known := s.spend.Known()
	switch {
	case known != nil:
		return *known, s.priced || s.spend.Calls > 0
	case s.spend.CostUSD != nil:
		return *s.spend.CostUSD, false
	}
	return 0, false
}

// projection says how a run's cost in all is projected.
type projection int

const (
	notProjected         projection = iota // every result stands, or nothing to project from
	projectedFromResults                   // the spend scaled to all the episodes
	projectedFromPrior                     // the spend and the published cost a task
)

// projected is what the run is projected to spend in all, until every episode's result
// stands: the spend scaled to all its episodes (over those whose result stands), else, before
// any does, the spend plus the published cost a task for each episode.
func (s *runState) projected() (float64, projection) {
	cost, _ := s.spent()
	switch {
	case s.settled >= s.total:
		return cost, notProjected
	case s.settled > 0:
		return cost * float64(s.total) / float64(s.settled), projectedFromResults
	case s.costPrior > 0:
		return cost + s.costPrior*float64(s.total), projectedFromPrior
	}
	return cost, notProjected
}

// waiting counts the running episodes whose model call waits, at now, for a retry and for the
// rate limiter.
func (s *runState) waiting(now time.Time) (retrying, limited int) {
	for _, e := range s.running {
		switch {
		case e.wait.Retry && now.Before(e.wait.Until):
			retrying++
		case !e.wait.Retry && e.wait.Reason != "":
			limited++
		}
	}
	return retrying, limited
}

// eta estimates how long the run has left, at now: the episodes not started and what is left
// of the running ones, at the mean time of the episodes that ended here, spread over the
// episodes seen running at once. An episode running longer than the mean is taken to need a
// tenth of it more. There is no estimate before an episode ended, nor once all are finished.
func (s *runState) eta(now time.Time) (time.Duration, bool) {
	if s.ended == 0 || s.finished >= s.total {
		return 0, false
	}
	mean := s.endedFor / time.Duration(s.ended)
	left := time.Duration(s.total-s.finished-len(s.running)) * mean
	for _, e := range s.running {
		left += max(mean-now.Sub(e.started), mean/10)
	}
	return left / time.Duration(max(s.most, 1)), true
}

// runningEpisodes are the running episodes in order of task and repeat.
func (s *runState) runningEpisodes() []runfolder.Episode {
	keys := make([]runfolder.Episode, 0, len(s.running))
	for k := range s.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runfolder.Episode) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), cmp.Compare(a.Repeat, b.Repeat))
	})
	return keys
}

// newWarnings are the rate limiter's warnings in st not shown yet; they count as shown now.
func (s *runState) newWarnings(st ratelimit.Status) []string {
	fresh := st.Warnings[min(s.warned, len(st.Warnings)):]
	s.warned = len(st.Warnings)
	return fresh
}
