package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunProgressOnATerminal: the live block (overall bar and one line per running episode) is
// redrawn in place, finished episodes print above it, and unknown cost never shows as zero.
func TestRunProgressOnATerminal(t *testing.T) {
	var out bytes.Buffer
	p := newRunProgress(&out, false)
	width := 90
	p.screen = liveScreen(&out, &width)
	cost := 0.25
	p.tell(runner.Planned{Total: 4, Finished: []runfolder.Result{{Task: "Scenario-1", Repeat: 1, Status: "ok", Score: 1, CostUSD: &cost}},
		Spent: runfolder.Spend{Calls: 1, CostUSD: &cost}})
	p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 1}, Turn: 5, MaxTurns: 100, Command: "grep -c error\n  logs.tsv"})
	p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 2}, Turn: 1, MaxTurns: 100, Command: ""})
	p.render()
	block := out.String()
	for _, want := range []string{"resuming: 1 of 4 episodes already finished", "1/4 episodes  2 running  ETA -\n",
		"\n  $0.25 spent, $1.00 projected  score 1.000 over 1 of 4 finished\n", // too long for one line of 90 columns
		"  Scenario-2 r1  turn 5/100  grep -c error logs.tsv", "  Scenario-2 r2  turn 1/100"} {
		if !strings.Contains(block, want) {
			t.Errorf("missing %q in\n%s", want, block)
		}
	}
	out.Reset()
	p.tell(runner.Charged{Charge: runfolder.Charge{Task: "Scenario-2", Repeat: 1}}) // at unknown prices
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-2", Repeat: 1, Status: "max_turns", Turns: 100}})
	after := out.String()
	if !strings.HasPrefix(after, "\033[4A\r\033[J") {
		t.Errorf("after an episode ended, the block is not erased first:\n%q", after)
	}
	textcheck.Has(t, "after an episode ended", after, "Scenario-2 repeat 1: max_turns, score 0.00, 100 turns, cost unknown", "2/4 episodes  1 running",
		"at least $0.25 spent (1 of 2 calls at unknown prices)", "score 0.500 over 2 of 4 finished")
	textcheck.Lacks(t, "after an episode ended", after, "turn 5/100")
}

// TestRunProgressElsewhere prints plain lines: one per finished episode and the overall line.
func TestRunProgressElsewhere(t *testing.T) {
	var out bytes.Buffer
	p := newRunProgress(&out, false)
	p.tell(runner.Planned{Total: 2})
	p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}, Turn: 3, MaxTurns: 100, Command: "ls"})
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "error", Error: "HTTP 401: bad key"}})
	p.render()
	got := out.String()
	textcheck.Has(t, "plain output", got, "Scenario-1 repeat 1: error, score 0.00, 0 turns, cost unknown: HTTP 401: bad key\n", "progress: 1/2 episodes")
	textcheck.Lacks(t, "plain output", got, "\033[")
}

// TestProgressStripsTerminalSequencesFromModelCommands: a command the model asks for, a task
// id from the dataset and an error quoting the provider reach the live display without their
// escape sequences (clear screen, colour, title, OSC 52 clipboard, 8-bit CSI): only the
// renderer's own cursor moves are left, and the text around the sequences still shows.
func TestProgressStripsTerminalSequencesFromModelCommands(t *testing.T) {
	var out bytes.Buffer
	p := newRunProgress(&out, false)
	width := 100
	p.screen = liveScreen(&out, &width)
	p.tell(runner.Planned{Total: 2})
	task := "Scenario-1\x1b[41m"
	p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: task, Repeat: 1}, Turn: 3, MaxTurns: 100, Command: "printf '\x1b[2J\x1b]0;pwned\x07\x1b]52;c;aGk=\x1b\\\xc2\x9b2J' && echo done"})
	p.render()
	live := out.String()
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: task, Repeat: 1, Status: "error", Error: "HTTP 400: \x1b]0;pwned\x07bad\nrequest \u202eexe"}})
	got := regexp.MustCompile(`\x1b\[\d+A\r\x1b\[J`).ReplaceAllString(out.String(), "") // the renderer's own
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "pwned", "aGk="} {
		if strings.Contains(got, bad) {
			t.Errorf("the terminal output holds %q:\n%q", bad, got)
		}
	}
	textcheck.Has(t, "the live block", live, "  Scenario-1 r1  turn 3/100  printf '' && echo done\n")
	textcheck.Has(t, "the terminal output", got, "Scenario-1 repeat 1: error, score 0.00, 0 turns, cost unknown: HTTP 400: bad request exe\n")
}

// TestRunProgressShowsRateLimits: the live block shows the rate limits in force and where
// each comes from, how much of each the last minute used, the calls waiting, the time waited
// and the 429s, in two lines a narrow terminal holds; each warning of the limiter prints once,
// above the block, stripped of escape sequences; a limiter that calls no provider shows
// nothing.
func TestRunProgressShowsRateLimits(t *testing.T) {
	var out bytes.Buffer
	p := newRunProgress(&out, false)
	width := 100
	p.screen = liveScreen(&out, &width)
	status := ratelimit.Status{Limits: []ratelimit.InForce{{Name: "requests", Given: 500, Learnt: 1000, Used: 100},
		{Name: "input_tokens", Learnt: 200_000, Used: 186_000}, {Name: "output_tokens", Learnt: 40_000, Given: 50_000, Used: 10_000}},
		Calls: 40, RateLimited: 3, WaitedSeconds: 65, Waiting: 2, Warnings: []string{"rate limits: x-ratelimit-limit-tokens \"\x1b[31mlots\" is not a number"}}
	p.limits = func() ratelimit.Status { return status }
	p.tell(runner.Planned{Total: 2})
	p.render()
	p.render()
	got := out.String()
	for _, want := range []string{
		"  limits a minute: 500 requests (given; stated 1k), 200k input tokens (stated), 40k output token...\n", // clipped
		"  last minute: 20%, 93%, 25% used; 2 calls waiting, 1m5s waited, 3 of 40 answered 429\n",
		"\033[3A\r\033[J", // the block is the bar and the two lines
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%q", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if len([]rune(line)) >= width+len("\033[3A\r\033[J") {
			t.Errorf("a line wider than the terminal: %q", line)
		}
	}
	if n := strings.Count(got, "warning: rate limits:"); n != 1 {
		t.Errorf("the warning printed %d times, want once:\n%q", n, got)
	}
	textcheck.Lacks(t, "the output with a warning", got, "\x1b[31m")

	out.Reset()
	p.screen = newScreen(&out, false)
	p.render()
	if got := out.String(); !strings.Contains(got, "rate limits: limits a minute: 500 requests (given; stated 1k), 200k input tokens (stated), "+
		"40k output tokens (stated; given 50k); last minute: 20%, 93%, 25% used; 2 calls waiting, 1m5s waited, 3 of 40 answered 429\n") {
		t.Errorf("plain output:\n%q", got)
	}
	out.Reset()
	p.limits = func() ratelimit.Status { return ratelimit.Status{} }
	p.render()
	if got := out.String(); strings.Contains(got, "limits") {
		t.Errorf("a limiter that calls no provider shows:\n%q", got)
	}
}

// liveScreen is a live screen on w, for a terminal *cols wide.
func liveScreen(w io.Writer, cols *int) *screen {
	return &screen{w: w, live: true, width: func() int { return *cols }}
}

// clockAt is a clock for the displays, at 14:00:00 and moved by the test.
func clockAt() (*time.Time, func() time.Time) {
	now := time.Date(2026, 5, 1, 14, 0, 0, 0, time.Local)
	return &now, func() time.Time { return now }
}

// plainProgress is the plain display of a run, writing to out, on a clock at now that the
// test moves.
func plainProgress() (p *runProgress, out *bytes.Buffer, now *time.Time) {
	out = new(bytes.Buffer)
	now, clock := clockAt()
	p = newRunProgress(out, true)
	p.now = clock
	return p, out, now
}

// waits puts four episodes in the states of a run whose provider is unreachable: the first
// call retrying a refused connection, the others held by the rate limiter, one of them until
// a known time.
func waits(p *runProgress, now time.Time) {
	p.tell(runner.Planned{Total: 8})
	for i := range 4 {
		p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: fmt.Sprintf("Scenario-%d", i+1), Repeat: 1}})
	}
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}, Wait: runner.Wait{Retry: true, Attempt: 1, Reason: "dial tcp 127.0.0.1:9: connect: connection refused", Until: now.Add(4 * time.Second)}})
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 1}, Wait: runner.Wait{Reason: "the first call goes alone until an answer states the provider's limits"}})
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-3", Repeat: 1}, Wait: runner.Wait{Reason: "the tokens limit, 200000 a minute", Until: now.Add(34 * time.Second)}})
}

// TestRunProgressShowsRetriesAndWaits: an episode waiting for a retry or for the rate limiter
// counts as running, and its live line says what it waits for: the failure and when the next
// attempt goes, or the rate limiter's reason; once it goes on, its line counts its retries.
func TestRunProgressShowsRetriesAndWaits(t *testing.T) {
	var out bytes.Buffer
	now, clock := clockAt()
	p := newRunProgress(&out, false)
	width := 200
	p.screen, p.now = liveScreen(&out, &width), clock
	waits(p, *now)
	p.render()
	for _, want := range []string{
		"0/8 episodes  4 running (1 waiting for a retry, 2 for the rate limiter)  ETA -",
		"  Scenario-1 r1  starting  retry 1: attempt 1 failed: dial tcp 127.0.0.1:9: connect: connection refused; next attempt in 4s (at 14:00:04)\n",
		"  Scenario-2 r1  starting  waiting for the rate limiter: the first call goes alone until an answer states the provider's limits\n",
		"  Scenario-3 r1  starting  waiting for the rate limiter: the tokens limit, 200000 a minute, until 14:00:34\n",
		"  Scenario-4 r1  starting\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	*now = now.Add(5 * time.Second)
	p.render()
	if want := "  Scenario-1 r1  starting  attempt 2 under way after: dial tcp 127.0.0.1:9: connect: connection refused\n"; !strings.Contains(out.String(), want) {
		t.Errorf("after the retry's time, missing %q in\n%s", want, out.String())
	}
	out.Reset()
	p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}, Turn: 1, MaxTurns: 100, Command: "kubectl get pods"})
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-3", Repeat: 1}, Wait: runner.Wait{}})
	p.render()
	for _, want := range []string{"  Scenario-1 r1  turn 1/100  (retries 1) kubectl get pods\n", "  Scenario-3 r1  starting\n",
		"4 running (0 waiting for a retry, 1 for the rate limiter)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("once the calls went on, missing %q in\n%s", want, out.String())
		}
	}
}

// TestRunProgressLogsRetriesAndWaits: plain output has a line per retry, with the failure and
// the next attempt's time, and one per wait for the rate limiter that lasted 10 s or more.
func TestRunProgressLogsRetriesAndWaits(t *testing.T) {
	p, out, now := plainProgress()
	waits(p, *now)
	*now = now.Add(2 * time.Second)
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 1}, Wait: runner.Wait{}}) // a short wait: no line
	*now = now.Add(32 * time.Second)
	p.tell(runner.EpisodeWaiting{Episode: runfolder.Episode{Task: "Scenario-3", Repeat: 1}, Wait: runner.Wait{}})
	p.render()
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Score: 1, Turns: 3, Retries: 1}})
	want := "Scenario-1 repeat 1: retry 1: attempt 1 failed: dial tcp 127.0.0.1:9: connect: connection refused; next attempt in 4s (at 14:00:04)\n" +
		"Scenario-3 repeat 1: waited 34s for the rate limiter (the tokens limit, 200000 a minute)\n" +
		"progress: 0/8 episodes  4 running  ETA -  $0.00 spent  no score yet (0 of 8 finished)\n" + // the retry went at 14:00:04
		"Scenario-1 repeat 1: ok, score 1.00, 3 turns, cost unknown, retries 1\n"
	if out.String() != want {
		t.Errorf("plain output:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunProgressLogsRetriesQuietly: a provider that throttles every second gives an episode
// a plain line at its first retry and then one each interval (30 s), with the count of
// retries, not a line per attempt; another episode's first retry has its own line.
func TestRunProgressLogsRetriesQuietly(t *testing.T) {
	p, out, now := plainProgress()
	p.tell(runner.Planned{Total: 2})
	one, two := runfolder.Episode{Task: "Scenario-1", Repeat: 1}, runfolder.Episode{Task: "Scenario-2", Repeat: 1}
	for attempt := 1; attempt <= 61; attempt++ {
		p.tell(runner.EpisodeWaiting{Episode: one, Wait: runner.Wait{Retry: true, Attempt: attempt, Reason: "HTTP 429: slow down", Until: now.Add(time.Second)}})
		if attempt == 10 {
			p.tell(runner.EpisodeWaiting{Episode: two, Wait: runner.Wait{Retry: true, Attempt: 1, Reason: "HTTP 503: busy", Until: now.Add(2 * time.Second)}})
		}
		*now = now.Add(time.Second)
	}
	want := "Scenario-1 repeat 1: retry 1: attempt 1 failed: HTTP 429: slow down; next attempt in 1s (at 14:00:01)\n" +
		"Scenario-2 repeat 1: retry 1: attempt 1 failed: HTTP 503: busy; next attempt in 2s (at 14:00:11)\n" +
		"Scenario-1 repeat 1: retry 31: attempt 31 failed: HTTP 429: slow down; next attempt in 1s (at 14:00:31)\n" +
		"Scenario-1 repeat 1: retry 61: attempt 61 failed: HTTP 429: slow down; next attempt in 1s (at 14:01:01)\n"
	if out.String() != want {
		t.Errorf("plain output:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunProgressETA: the time left is the episodes not started and what is left of the
// running ones, at the mean time of the episodes ended, over the episodes run at once.
func TestRunProgressETA(t *testing.T) {
	p, _, now := plainProgress()
	p.tell(runner.Planned{Total: 10})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 1}})
	*now = now.Add(time.Minute)
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Duration: 60}})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-3", Repeat: 1}})
	*now = now.Add(30 * time.Second)
	// 7 not started x 60 s, Scenario-2 over the mean (a tenth of it: 6 s), Scenario-3 30 s
	// more; over 2 at once.
	if got := p.overall(*now); !strings.Contains(got, "1/10 episodes  2 running  ETA 3m48s") {
		t.Errorf("overall: %s", got)
	}
}

// TestRunProgressSaysWhatCtrlCDoes: after Ctrl-C the display says the running episodes get the
// grace, until when, and that a second Ctrl-C stops them at once; then that they are stopped,
// and why.
func TestRunProgressSaysWhatCtrlCDoes(t *testing.T) {
	p, out, _ := plainProgress()
	p.tell(runner.Planned{Total: 4})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-2", Repeat: 1}})
	p.tell(runner.Interrupted{Grace: 20 * time.Second})
	p.render()
	p.tell(runner.Stopping{Why: "interrupted again"})
	want := "interrupted: no more episodes start; finishing 2 running episodes for up to 20s (until 14:00:20), then they are stopped and recorded unfinished; press Ctrl-C again to stop them at once\n" +
		"progress: 0/4 episodes  2 running  stopping by 14:00:20  $0.00 spent  no score yet (0 of 4 finished)\n" +
		"interrupted again: stopping 2 running episodes now; they are recorded unfinished\n"
	if out.String() != want {
		t.Errorf("after Ctrl-C:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunProgressCountsInEnglish: one running episode is "1 running episode", not "1 running
// episodes", and "it", not "they".
func TestRunProgressCountsInEnglish(t *testing.T) {
	p, out, _ := plainProgress()
	p.tell(runner.Planned{Total: 1})
	p.tell(runner.EpisodeStarted{Episode: runfolder.Episode{Task: "Scenario-1", Repeat: 1}})
	p.tell(runner.Interrupted{Grace: 20 * time.Second})
	p.tell(runner.Stopping{Why: "interrupted again"})
	want := "interrupted: no more episodes start; finishing 1 running episode for up to 20s (until 14:00:20), then it is stopped and recorded unfinished; press Ctrl-C again to stop it at once\n" +
		"interrupted again: stopping 1 running episode now; it is recorded unfinished\n"
	if out.String() != want {
		t.Errorf("after Ctrl-C:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunTotalsSeparateThousands: the token counts of the final table read 402,211, not 402211.
func TestRunTotalsSeparateThousands(t *testing.T) {
	run, err := report.Load(filepath.Join("..", "..", "testdata", "runs", "qwen"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	renderRunTotals(&out, run, 0)
	textcheck.Has(t, "the totals", out.String(), " 922,541 ", " 2,410,337 ")
	if four := regexp.MustCompile(`\d{4}`).FindString(out.String()); four != "" {
		t.Errorf("a count without separators (%s) in\n%s", four, out.String())
	}
}

// ledgerOf is the ledger of results whose attempts made one call each.
func ledgerOf(results []runfolder.Result) runfolder.Spend {
	var s runfolder.Spend
	for _, r := range results {
		s.Add(runfolder.Charge{Task: r.Task, Repeat: 1, CostUSD: r.CostUSD})
	}
	return s
}

// TestRunProgressProjectsTheCost: the cost is what was spent and, until the run ends, the
// spend scaled to all its episodes, or before any has finished the published cost a task
// times the episodes; unknown prices are never $0.
func TestRunProgressProjectsTheCost(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		prior    float64
		finished []runfolder.Result
		want     string
	}{
		{0, nil, "$0.00 spent"},
		{5.38, nil, "$0.00 spent, $53.80 projected (published $/task)"},
		{5.38, []runfolder.Result{{Task: "a", Status: "ok", CostUSD: usd(1)}, {Task: "b", Status: "ok", CostUSD: usd(3)}}, "$4.00 spent, $20.00 projected"},
		// One call at unknown prices among two.
		{0, []runfolder.Result{{Task: "a", CostUSD: usd(1)}, {Task: "b"}}, "at least $1.00 spent (1 of 2 calls at unknown prices)"},
		{0, []runfolder.Result{{Task: "b"}}, "cost unknown"},
		// Episodes a resume plays again (stopped at the budget, in error) project nothing.
		{5, []runfolder.Result{{Task: "a", Status: "cost_limit", CostUSD: usd(2)}}, "$2.00 spent, $52.00 projected (published $/task)"},
		{0, []runfolder.Result{{Task: "a", Status: "error", CostUSD: usd(2)}, {Task: "b", Status: "ok", CostUSD: usd(3)}}, "$5.00 spent, $50.00 projected"},
	} {
		p := newRunProgress(io.Discard, true)
		p.state.costPrior = c.prior
		p.tell(runner.Planned{Total: 10, Finished: c.finished, Spent: ledgerOf(c.finished)})
		if got := p.costText(); got != c.want {
			t.Errorf("prior %v, %d finished: %q, want %q", c.prior, len(c.finished), got, c.want)
		}
	}
	p := newRunProgress(io.Discard, true)
	done := []runfolder.Result{{Task: "a", Status: "ok", CostUSD: usd(1)}, {Task: "b", Status: "max_turns", CostUSD: usd(2)}}
	p.tell(runner.Planned{Total: 2, Finished: done, Spent: ledgerOf(done)})
	if got := p.costText(); got != "$3.00 spent" {
		t.Errorf("a finished run: %q", got)
	}
}
