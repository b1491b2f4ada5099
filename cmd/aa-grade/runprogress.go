package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// runProgress renders a run. On a terminal: an overall bar (episodes done, running score,
// cost so far, ETA), the rate limits in force, and one live line per running episode (task,
// repeat, turn n of N, last command), redrawn in place, with a line per finished episode and
// each warning of the rate limiter above them. Elsewhere: the line per finished episode, the
// warnings, and an overall line and the rate limits' every interval.
type runProgress struct {
	w        io.Writer
	terminal bool
	width    int
	interval time.Duration
	start    time.Time

	mu        sync.Mutex
	total     int
	finished  int // episodes with a result, earlier runs of the folder included
	endedHere int // episodes finished by this process, for the ETA
	scoreSum  float64
	cost      float64
	costKnown bool
	running   map[runfolder.Episode]*liveEpisode
	drawn     int // lines of the live block on screen
	// limits, when set, is the status of the run's rate limiter; warned counts its warnings
	// printed.
	limits func() harness.LimitStatus
	warned int

	stop chan struct{}
	wg   sync.WaitGroup
}

type liveEpisode struct {
	turn, maxTurns int
	command        string
}

func newRunProgress(w io.Writer) *runProgress {
	p := &runProgress{w: w, terminal: isTerminal(w), width: 100, interval: 30 * time.Second, start: time.Now(),
		running: map[runfolder.Episode]*liveEpisode{}, costKnown: true, stop: make(chan struct{})}
	if p.terminal {
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
		p.printLocked(fmt.Sprintf("resuming: %d of %d episodes already finished", len(finished), total))
	}
}

func (p *runProgress) Turn(task string, repeat, turn, maxTurns int, command string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.running[runfolder.Episode{Task: task, Repeat: repeat}]
	if e == nil {
		e = &liveEpisode{}
		p.running[runfolder.Episode{Task: task, Repeat: repeat}] = e
	}
	e.turn, e.maxTurns = turn, maxTurns
	if command != "" {
		e.command = command
	}
}

func (p *runProgress) Finished(r runfolder.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, runfolder.Episode{Task: r.Task, Repeat: r.Repeat})
	p.count(r)
	p.endedHere++
	line := fmt.Sprintf("%s repeat %d: %s, score %.2f, %s, %s", r.Task, r.Repeat, r.Status, r.Score, plural(r.Turns, "turn"), "cost "+report.FormatUSD(r.CostUSD))
	if r.Error != "" {
		line += ": " + r.Error
	}
	if r.JudgeNote != "" {
		line += "; " + r.JudgeNote
	}
	p.printLocked(line)
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
		every(p.interval, p.stop, func() {
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
	p.clear()
	p.limitStatus() // the last warnings
}

// printLocked prints a line above the live block, sanitized: it may quote the model, the
// sandbox or a provider (a finished episode's error) and a dataset (the task id).
func (p *runProgress) printLocked(line string) {
	p.clear()
	printLine(p.w, "%s", line)
	if p.terminal {
		p.render()
	}
}

func (p *runProgress) clear() {
	if p.terminal && p.drawn > 0 {
		fmt.Fprintf(p.w, "\033[%dA\r\033[J", p.drawn)
		p.drawn = 0
	}
}

// overall is the run's state in one line.
func (p *runProgress) overall() string {
	score := 0.0
	if p.finished > 0 {
		score = p.scoreSum / float64(p.finished)
	}
	cost := "cost unknown"
	if p.costKnown {
		cost = fmt.Sprintf("$%.2f so far", p.cost)
	}
	eta := "ETA -"
	if p.endedHere > 0 && p.total > p.finished {
		per := time.Since(p.start) / time.Duration(p.endedHere)
		eta = "ETA " + (per * time.Duration(p.total-p.finished)).Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d episodes  score %.3f  %s  %d running  %s", p.finished, p.total, score, cost, len(p.running), eta)
}

func (p *runProgress) render() {
	if !p.terminal {
		status, show := p.limitStatus()
		fmt.Fprintln(p.w, "progress: "+p.overall())
		if show {
			limits, calls := describeLimits(status, true)
			fmt.Fprintln(p.w, "rate limits: "+limits+"; "+calls)
		}
		return
	}
	p.clear()
	lines := []string{bar(int64(p.finished), int64(p.total), 24) + " " + p.overall()}
	if status, show := p.limitStatus(); show {
		limits, calls := describeLimits(status, true)
		lines = append(lines, clip("  "+limits, p.width), clip("  "+calls, p.width))
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
		// The model's command and the task id are sanitized before the line is measured.
		cmd := strings.Join(strings.Fields(termtext.Sanitize(e.command)), " ")
		lines = append(lines, clip(fmt.Sprintf("  %s r%d  turn %d/%d  %s", termtext.Sanitize(k.Task), k.Repeat, e.turn, e.maxTurns, cmd), p.width))
	}
	for _, l := range lines {
		fmt.Fprintln(p.w, l)
	}
	p.drawn = len(lines)
}

// clip cuts a line of the live block to width, so that it takes one row of the terminal and
// the block can be redrawn in place.
func clip(line string, width int) string {
	if r := []rune(line); len(r) > width {
		return string(r[:width-3]) + "..."
	}
	return line
}

// limitStatus reads the rate limiter's status, prints its warnings not printed yet (where the
// live block is not drawn), and says whether there is anything to show: not for a model that
// calls no provider.
func (p *runProgress) limitStatus() (harness.LimitStatus, bool) {
	if p.limits == nil {
		return harness.LimitStatus{}, false
	}
	s := p.limits()
	for _, w := range s.Warnings[min(p.warned, len(s.Warnings)):] {
		printLine(p.w, "warning: %s", w)
	}
	p.warned = len(s.Warnings)
	return s, !s.Idle()
}

// describeLimits says which rate limits are in force, where each comes from (given by flag,
// stated by the provider's answers), and what the calls met; live, also how much of each the
// last minute used and the calls waiting now. It says it in two parts, the limits and the
// calls, each short enough for a line of the live block.
func describeLimits(s harness.LimitStatus, live bool) (limits, calls string) {
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
func limitSource(l harness.LimitInForce) string {
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
