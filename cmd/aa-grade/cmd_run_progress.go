package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// runProgress renders a run's events (runner.Event) as its state (runState) stands. On a
// terminal: an overall bar (episodes done and running, ETA, cost spent and projected, running
// score), the rate limits in force, and one live line per running episode (task, repeat, turn n of N, and
// its last command or what it waits for: a retry, with the failure and the time of the next
// attempt, or the rate limiter, with the reason), redrawn in place, with a line per finished
// episode and each warning of the rate limiter above them. Elsewhere (or with --no-progress):
// the line per finished episode, a line for an episode's first retry and then at most one each
// interval (with the count), a line per long wait for the rate limiter, the
// warnings, and an overall line and the rate limits' every interval. After Ctrl-C it says
// what happens to the running episodes.
type runProgress struct {
	screen   *screen
	interval time.Duration
	now      func() time.Time
	// limits, when set, is the status of the run's rate limiter.
	limits func() ratelimit.Status

	mu    sync.Mutex
	state *runState

	stop chan struct{}
	wg   sync.WaitGroup
}

// longWait is how long a wait for the rate limiter lasts before plain output mentions it.
const longWait = 10 * time.Second

func newRunProgress(w io.Writer, plain bool) *runProgress {
	p := &runProgress{screen: newScreen(w, plain), interval: 30 * time.Second, now: time.Now, state: newRunState(),
		stop: make(chan struct{})}
	if p.screen.live {
		p.interval = 250 * time.Millisecond
	}
	return p
}

// tell takes one event of the run (runner.Config.Progress) into the state, and prints the
// line it calls for, if any.
func (p *runProgress) tell(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, now := p.state, p.now()
	switch e := e.(type) {
	case runner.Planned:
		s.plan(e.Total, e.Finished, e.Spent)
		if len(e.Finished) > 0 {
			p.printLocked(fmt.Sprintf("resuming: %d of %s already finished", len(e.Finished), english.Count(e.Total, "episode")))
		}
	case runner.Charged:
		s.charged(e.Charge)
	case runner.EpisodeStarted:
		s.start(e.Episode, now)
	case runner.EpisodeTurn:
		s.turn(e, now)
	case runner.EpisodeWaiting:
		was, lasted := s.wait(e.Episode, e.Wait, now)
		if p.screen.live {
			return
		}
		name := fmt.Sprintf("%s repeat %d: ", e.Episode.Task, e.Episode.Repeat)
		switch w := e.Wait; {
		case w.Retry && s.logRetry(e.Episode, now, p.interval):
			printLine(p.screen.w, "%s", name+describeRetry(w, s.running[e.Episode].retries, now))
		case w.Reason == "" && was.Reason != "" && !was.Retry && lasted >= longWait:
			printLine(p.screen.w, "%swaited %s for the rate limiter (%s)", name, lasted.Round(time.Second), was.Reason)
		}
	case runner.EpisodeFinished:
		s.finish(e.Result)
		p.printLocked(describeFinished(e.Result))
	case runner.Interrupted:
		s.interrupt(now.Add(e.Grace))
		if len(s.running) == 0 {
			p.printLocked("interrupted: no more episodes start")
			return
		}
		they, them := pronouns(len(s.running))
		p.printLocked(fmt.Sprintf("interrupted: no more episodes start; finishing %s for up to %s (until %s), then %s "+
			"stopped and recorded unfinished; press Ctrl-C again to stop %s at once",
			english.Count(len(s.running), "running episode"), e.Grace, s.stopBy.Format(time.TimeOnly), they, them))
	case runner.TrajectoryPlain:
		p.printLocked(fmt.Sprintf("warning: %s repeat %d: %s kept uncompressed: %v", e.Episode.Task, e.Episode.Repeat,
			runfolder.TrajectoryFile, e.Err))
	case runner.Stopping:
		if len(s.running) > 0 {
			they, _ := pronouns(len(s.running))
			p.printLocked(fmt.Sprintf("%s: stopping %s now; %s recorded unfinished", e.Why,
				english.Count(len(s.running), "running episode"), they))
		}
	}
}

// describeRetry says how many retries the episode has had (retries, this one included), which
// attempt failed, how, and when the next one goes.
func describeRetry(w runner.Wait, retries int, now time.Time) string {
	return fmt.Sprintf("retry %d: attempt %d failed: %s; next attempt %s", retries, w.Attempt, w.Reason,
		nextAttempt(now, w.Until.Sub(now)))
}

// describeFinished is the line of a finished episode.
func describeFinished(r runfolder.Result) string {
	line := fmt.Sprintf("%s repeat %d: %s, score %.2f, %s, %s", r.Task, r.Repeat, r.Status, r.Score,
		english.Count(r.Turns, "turn"), "cost "+report.FormatUSD(r.CostUSD))
	if r.Retries > 0 {
		line += fmt.Sprintf(", retries %d", r.Retries)
	}
	if r.Error != "" {
		line += ": " + r.Error
	}
	if r.JudgeNote != "" {
		line += "; " + r.JudgeNote
	}
	return line
}

// pronouns are "it is" and "it" for one episode, "they are" and "them" for more.
func pronouns(n int) (are, them string) {
	if n == 1 {
		return "it is", "it"
	}
	return "they are", "them"
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

// overall is the run's state in one line: its counts, then where it stands.
func (p *runProgress) overall(now time.Time) string {
	return p.counts(now) + "  " + p.standing()
}

// overallLines is the run's state in the live block: one line with its bar when the terminal
// has room for it, else two, the counts with the bar and then where the run stands, so that a
// narrow terminal cuts the score's label before the cost.
func (p *runProgress) overallLines(now time.Time, cols int) []string {
	done, total := int64(p.state.finished), int64(p.state.total)
	if line := p.overall(now); termtext.Width(line) < cols {
		return []string{withBar(done, total, line, cols)}
	}
	return []string{withBar(done, total, p.counts(now), cols), "  " + p.standing()}
}

// standing is what the run has cost and its score, the most wanted first: the cost, then the
// score over the episodes finished, as the viewer gives it (report.ScoreSoFar).
func (p *runProgress) standing() string {
	s := p.state
	return p.costText() + "  " + report.ScoreSoFar(s.scoreSum, s.scored, s.total)
}

// costText is what the run has spent in all (its ledger: every call, whatever became of its
// episode) and, until every episode's result stands, what it is projected to spend in all
// (runState.projected). "cost unknown" when the model's prices are, "at least" when some
// calls' are.
func (p *runProgress) costText() string {
	s := p.state
	cost, known := s.spent()
	switch {
	case s.spend.Unpriced > 0 && s.spend.CostUSD != nil:
		return fmt.Sprintf("at least $%.2f spent (%d of %s at unknown prices)", cost, s.spend.Unpriced,
			english.Count(s.spend.Calls, "call"))
	case !known:
		return "cost unknown"
	}
	spent := fmt.Sprintf("$%.2f spent", cost)
	switch projected, how := s.projected(); how {
	case projectedFromResults:
		return fmt.Sprintf("%s, $%.2f projected", spent, projected)
	case projectedFromPrior:
		return fmt.Sprintf("%s, $%.2f projected (published $/task)", spent, projected)
	}
	return spent
}

// counts are the episodes finished and running, and when the run should end.
func (p *runProgress) counts(now time.Time) string {
	s := p.state
	running := fmt.Sprintf("%d running", len(s.running))
	if retrying, limited := s.waiting(now); retrying+limited > 0 {
		running += fmt.Sprintf(" (%d waiting for a retry, %d for the rate limiter)", retrying, limited)
	}
	return fmt.Sprintf("%d/%s  %s  %s", s.finished, english.Count(s.total, "episode"), running, p.eta(now))
}

// eta says when the run ends (runState.eta); after Ctrl-C, when the running episodes are
// stopped instead.
func (p *runProgress) eta(now time.Time) string {
	if !p.state.stopBy.IsZero() {
		return "stopping by " + p.state.stopBy.Format(time.TimeOnly)
	}
	left, ok := p.state.eta(now)
	if !ok {
		return "ETA -"
	}
	return "ETA " + left.Round(time.Second).String()
}

// render draws the live block, or prints the overall and rate-limit lines.
func (p *runProgress) render() {
	now := p.now()
	if !p.screen.live {
		p.renderPlain(now)
		return
	}
	p.renderLive(now)
}

func (p *runProgress) renderPlain(now time.Time) {
	status, show := p.limitStatus()
	fmt.Fprintln(p.screen.w, "progress: "+p.overall(now))
	if show {
		limits, calls := describeLimits(status, true)
		fmt.Fprintln(p.screen.w, "rate limits: "+limits+"; "+calls)
	}
}

func (p *runProgress) renderLive(now time.Time) {
	p.screen.clear()
	s := p.state
	lines := p.overallLines(now, p.screen.width())
	if status, show := p.limitStatus(); show {
		limits, calls := describeLimits(status, true)
		lines = append(lines, "  "+limits, "  "+calls)
	}
	for _, k := range s.runningEpisodes() {
		e := s.running[k]
		turn := "starting"
		if e.turn > 0 {
			turn = fmt.Sprintf("turn %d/%d", e.turn, e.maxTurns)
		}
		line := fmt.Sprintf("  %s r%d  %s  %s", termtext.Sanitize(k.Task), k.Repeat, turn, e.doing(now))
		lines = append(lines, strings.TrimRight(line, " "))
	}
	p.screen.draw(lines)
}

// doing says what a running episode does now, sanitized: what it waits for, else its last
// command (the model's, and so untrusted), after its retries if any.
func (e *liveEpisode) doing(now time.Time) string {
	var s string
	switch w := e.wait; {
	case w.Retry && now.Before(w.Until):
		s = describeRetry(w, e.retries, now)
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
	for _, w := range p.state.newWarnings(s) {
		warnLine(p.screen.w, "warning: %s", w)
	}
	return s, !s.Idle()
}

// describeLimits says which rate limits are in force, where each comes from (given by flag,
// stated by the provider's answers), and what the calls met; live, also how much of each the
// last minute used and the calls waiting now. It says it in two parts, the limits and the
// calls, each short enough for a line of the live block.
func describeLimits(s ratelimit.Status, live bool) (limits, calls string) {
	var items, used []string
	for _, l := range s.Limits {
		items = append(items,
			fmt.Sprintf("%s %s (%s)", shortCount(l.PerMinute()), strings.ReplaceAll(l.Name, "_", " "), limitSource(l)))
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
	calls = fmt.Sprintf("%s waiting, %s waited, %d of %d answered 429", english.Count(s.Waiting, "call"), waited,
		s.RateLimited, s.Calls)
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
