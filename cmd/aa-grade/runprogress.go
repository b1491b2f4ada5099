package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/harness/ratelimit"
	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// runProgress renders a run. On a terminal: an overall bar (episodes done and running, ETA,
// running score, cost so far), the rate limits in force, and one live line per running
// episode (task, repeat, turn n of N, and its last command or what it waits for: a retry, with
// the failure and the time of the next attempt, or the rate limiter, with the reason), redrawn
// in place, with a line per finished episode and each warning of the rate limiter above them.
// Elsewhere (or with --no-progress): the line per finished episode, a line per retry and per
// long wait for the rate limiter, the warnings, and an overall line and the rate limits' every
// interval. After Ctrl-C it says what happens to the running episodes.
type runProgress struct {
	screen   *screen
	interval time.Duration
	now      func() time.Time

	mu        sync.Mutex
	total     int
	finished  int // episodes with a result, earlier runs of the folder included
	scoreSum  float64
	cost      float64
	costKnown bool
	running   map[runfolder.Episode]*liveEpisode
	// most is the most episodes seen running at once: the run's parallelism, for the ETA;
	// ended and endedFor are the final episodes this process ran, and their time.
	most     int
	ended    int
	endedFor time.Duration
	stopBy   time.Time // after Ctrl-C, when the running episodes are stopped
	// limits, when set, is the status of the run's rate limiter; warned counts its warnings
	// printed.
	limits func() ratelimit.Status
	warned int

	stop chan struct{}
	wg   sync.WaitGroup
}

type liveEpisode struct {
	started        time.Time
	turn, maxTurns int
	command        string
	retries        int
	wait           runner.Wait // the wait now; zero when none
	waitSince      time.Time
}

// longWait is how long a wait for the rate limiter lasts before plain output mentions it.
const longWait = 10 * time.Second

func newRunProgress(w io.Writer, plain bool) *runProgress {
	p := &runProgress{screen: newScreen(w, plain), interval: 30 * time.Second, now: time.Now,
		running: map[runfolder.Episode]*liveEpisode{}, costKnown: true, stop: make(chan struct{})}
	if p.screen.live {
		p.interval = 250 * time.Millisecond
	}
	return p
}

func (p *runProgress) Plan(total int, finished []runfolder.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	for _, r := range finished {
		p.count(r)
	}
	if len(finished) > 0 {
		p.printLocked(fmt.Sprintf("resuming: %d of %s already finished", len(finished), english.Count(total, "episode")))
	}
}

func (p *runProgress) Started(task string, repeat int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[runfolder.Episode{Task: task, Repeat: repeat}] = &liveEpisode{started: p.now()}
	p.most = max(p.most, len(p.running))
}

// episode is a running episode's state; one not told Started yet starts now.
func (p *runProgress) episode(task string, repeat int) *liveEpisode {
	k := runfolder.Episode{Task: task, Repeat: repeat}
	e := p.running[k]
	if e == nil {
		e = &liveEpisode{started: p.now()}
		p.running[k] = e
		p.most = max(p.most, len(p.running))
	}
	return e
}

func (p *runProgress) Turn(task string, repeat, turn, maxTurns int, command string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.episode(task, repeat)
	e.turn, e.maxTurns, e.wait = turn, maxTurns, runner.Wait{}
	if command != "" {
		e.command = command
	}
}

func (p *runProgress) Waiting(task string, repeat int, w runner.Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, now := p.episode(task, repeat), p.now()
	was, since := e.wait, e.waitSince
	e.wait, e.waitSince = w, now
	name := fmt.Sprintf("%s repeat %d: ", task, repeat)
	switch {
	case w.Retry:
		e.retries++
		if !p.screen.live {
			printLine(p.screen.w, "%s", name+describeRetry(w, now))
		}
	case w.Reason == "" && was.Reason != "" && !was.Retry && now.Sub(since) >= longWait && !p.screen.live:
		printLine(p.screen.w, "%swaited %s for the rate limiter (%s)", name, now.Sub(since).Round(time.Second), was.Reason)
	}
}

// describeRetry says which attempt failed, how, and when the next one goes.
func describeRetry(w runner.Wait, now time.Time) string {
	return fmt.Sprintf("attempt %d failed: %s; next attempt %s", w.Attempt, w.Reason, nextAttempt(now, w.Until.Sub(now)))
}

func (p *runProgress) Finished(r runfolder.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, runfolder.Episode{Task: r.Task, Repeat: r.Repeat})
	p.count(r)
	if r.Final() {
		p.ended++
		p.endedFor += time.Duration(r.Duration * float64(time.Second))
	}
	line := fmt.Sprintf("%s repeat %d: %s, score %.2f, %s, %s", r.Task, r.Repeat, r.Status, r.Score, english.Count(r.Turns, "turn"), "cost "+report.FormatUSD(r.CostUSD))
	if r.Retries > 0 {
		line += fmt.Sprintf(", retries %d", r.Retries)
	}
	if r.Error != "" {
		line += ": " + r.Error
	}
	if r.JudgeNote != "" {
		line += "; " + r.JudgeNote
	}
	p.printLocked(line)
}

func (p *runProgress) Interrupted(grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopBy = p.now().Add(grace)
	if len(p.running) == 0 {
		p.printLocked("interrupted: no more episodes start")
		return
	}
	they, them := pronouns(len(p.running))
	p.printLocked(fmt.Sprintf("interrupted: no more episodes start; finishing %s for up to %s (until %s), then %s stopped and recorded unfinished; press Ctrl-C again to stop %s at once",
		english.Count(len(p.running), "running episode"), grace, p.stopBy.Format(time.TimeOnly), they, them))
}

func (p *runProgress) Stopping(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.running) > 0 {
		they, _ := pronouns(len(p.running))
		p.printLocked(fmt.Sprintf("%s: stopping %s now; %s recorded unfinished", why, english.Count(len(p.running), "running episode"), they))
	}
}

// pronouns are "it is" and "it" for one episode, "they are" and "them" for more.
func pronouns(n int) (are, them string) {
	if n == 1 {
		return "it is", "it"
	}
	return "they are", "them"
}

func (p *runProgress) count(r runfolder.Result) {
	p.finished++
	p.scoreSum += r.Score
	if r.CostUSD == nil {
		p.costKnown = false
	} else {
		p.cost += *r.CostUSD
	}
}

// Start begins periodic rendering; Stop ends it, leaving the last overall line.
func (p *runProgress) Start() {
	p.wg.Go(func() {
		p.screen.refresh(p.interval, p.stop, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.render()
		})
	})
}

func (p *runProgress) Stop() {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.screen.live {
		p.screen.clear()
	}
	p.limitStatus() // the last warnings
}

// printLocked prints a line above the live block, sanitized: it may quote the model, the
// sandbox or a provider (a finished episode's error) and a dataset (the task id).
func (p *runProgress) printLocked(line string) {
	if p.screen.live {
		p.screen.clear()
	}
	printLine(p.screen.w, "%s", line)
	if p.screen.live {
		p.render()
	}
}

// overall is the run's state in one line, the most wanted first: a narrow terminal cuts the
// end.
func (p *runProgress) overall(now time.Time) string {
	// The score as the reports and the viewer give it: over every episode of the run, those
	// not finished counted 0.
	score := 0.0
	if p.total > 0 {
		score = p.scoreSum / float64(p.total)
	}
	cost := "cost unknown"
	if p.costKnown {
		cost = fmt.Sprintf("$%.2f so far", p.cost)
	}
	running := fmt.Sprintf("%d running", len(p.running))
	retrying, limited := 0, 0
	for _, e := range p.running {
		switch {
		case e.wait.Retry && now.Before(e.wait.Until):
			retrying++
		case !e.wait.Retry && e.wait.Reason != "":
			limited++
		}
	}
	if retrying+limited > 0 {
		running += fmt.Sprintf(" (%d waiting for a retry, %d for the rate limiter)", retrying, limited)
	}
	return fmt.Sprintf("%d/%d episodes  %s  %s  score %.3f%s  %s", p.finished, p.total, running, p.eta(now), score,
		report.SoFar(p.total-p.finished), cost)
}

// eta estimates when the run ends: the episodes not started and what is left of the running
// ones, at the mean time of the episodes that ended here, spread over the episodes seen
// running at once. An episode running longer than the mean is taken to need a tenth of it
// more. After Ctrl-C it says when the running episodes are stopped instead.
func (p *runProgress) eta(now time.Time) string {
	if !p.stopBy.IsZero() {
		return "stopping by " + p.stopBy.Format(time.TimeOnly)
	}
	if p.ended == 0 || p.finished >= p.total {
		return "ETA -"
	}
	mean := p.endedFor / time.Duration(p.ended)
	left := time.Duration(p.total-p.finished-len(p.running)) * mean
	for _, e := range p.running {
		left += max(mean-now.Sub(e.started), mean/10)
	}
	return "ETA " + (left / time.Duration(max(p.most, 1))).Round(time.Second).String()
}

func (p *runProgress) render() {
	now := p.now()
	if !p.screen.live {
		status, show := p.limitStatus()
		fmt.Fprintln(p.screen.w, "progress: "+p.overall(now))
		if show {
			limits, calls := describeLimits(status, true)
			fmt.Fprintln(p.screen.w, "rate limits: "+limits+"; "+calls)
		}
		return
	}
	p.screen.clear()
	lines := []string{withBar(int64(p.finished), int64(p.total), p.overall(now), p.screen.width())}
	if status, show := p.limitStatus(); show {
		limits, calls := describeLimits(status, true)
		lines = append(lines, "  "+limits, "  "+calls)
	}
	keys := make([]runfolder.Episode, 0, len(p.running))
	for k := range p.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runfolder.Episode) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), cmp.Compare(a.Repeat, b.Repeat))
	})
	for _, k := range keys {
		e := p.running[k]
		turn := "starting"
		if e.turn > 0 {
			turn = fmt.Sprintf("turn %d/%d", e.turn, e.maxTurns)
		}
		lines = append(lines, strings.TrimRight(fmt.Sprintf("  %s r%d  %s  %s", termtext.Sanitize(k.Task), k.Repeat, turn, e.doing(now)), " "))
	}
	p.screen.draw(lines)
}

// doing says what a running episode does now, sanitized: what it waits for, else its last
// command (the model's, and so untrusted), after its retries if any.
func (e *liveEpisode) doing(now time.Time) string {
	var s string
	switch w := e.wait; {
	case w.Retry && now.Before(w.Until):
		s = describeRetry(w, now)
	case w.Retry:
		s = fmt.Sprintf("attempt %d under way after: %s", w.Attempt+1, w.Reason)
	case w.Reason != "":
		s = "waiting for the rate limiter: " + w.Reason
		if now.Before(w.Until) {
			s += ", until " + w.Until.Format(time.TimeOnly)
		}
	default:
		s = e.command
		if e.retries > 0 {
			s = fmt.Sprintf("(retries %d) %s", e.retries, s)
		}
	}
	return strings.Join(strings.Fields(termtext.Sanitize(s)), " ")
}

// limitStatus reads the rate limiter's status, prints its warnings not printed yet (where the
// live block is not drawn), and says whether there is anything to show: not for a model that
// calls no provider.
func (p *runProgress) limitStatus() (ratelimit.Status, bool) {
	if p.limits == nil {
		return ratelimit.Status{}, false
	}
	s := p.limits()
	for _, w := range s.Warnings[min(p.warned, len(s.Warnings)):] {
		printLine(p.screen.w, "warning: %s", w)
	}
	p.warned = len(s.Warnings)
	return s, !s.Idle()
}

// describeLimits says which rate limits are in force, where each comes from (given by flag,
// stated by the provider's answers), and what the calls met; live, also how much of each the
// last minute used and the calls waiting now. It says it in two parts, the limits and the
// calls, each short enough for a line of the live block.
func describeLimits(s ratelimit.Status, live bool) (limits, calls string) {
	var items, used []string
	for _, l := range s.Limits {
		items = append(items, fmt.Sprintf("%s %s (%s)", shortCount(l.PerMinute()), strings.ReplaceAll(l.Name, "_", " "), limitSource(l)))
		used = append(used, fmt.Sprintf("%d%%", 100*l.Used/l.PerMinute()))
	}
	limits = "limits a minute: " + strings.Join(items, ", ")
	if len(items) == 0 {
		limits = "no limits stated or given"
	}
	waited := time.Duration(s.WaitedSeconds * float64(time.Second)).Round(time.Second)
	if !live {
		return limits, fmt.Sprintf("calls waited %s in all for them, %d of %d answered 429", waited, s.RateLimited, s.Calls)
	}
	calls = fmt.Sprintf("%d calls waiting, %s waited, %d of %d answered 429", s.Waiting, waited, s.RateLimited, s.Calls)
	if len(used) > 0 {
		calls = "last minute: " + strings.Join(used, ", ") + " used; " + calls
	}
	return limits, calls
}

// limitSource says where a limit in force comes from, and the other limit when there are two.
func limitSource(l ratelimit.InForce) string {
	switch {
	case l.Given == 0:
		return "stated"
	case l.Learnt == 0:
		return "given"
	case l.Learnt < l.Given:
		return "stated; given " + shortCount(l.Given)
	}
	return "given; stated " + shortCount(l.Learnt)
}

// shortCount writes whole thousands and millions as k and M (200k, 2M), anything else whole.
func shortCount(n int64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}
