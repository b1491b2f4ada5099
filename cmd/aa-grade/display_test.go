package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// busyRun is a run display with four episodes running long commands and the rate limits
// shown, drawn on term through a screen as wide as *cols.
func busyRun(term *vt, cols *int) *runProgress {
	p := newRunProgress(term, false)
	p.screen = liveScreen(term, cols)
	p.state.costPrior = 5.38
	p.limits = func() ratelimit.Status {
		return ratelimit.Status{Limits: []ratelimit.InForce{{Name: "requests", Learnt: 1000, Used: 120},
			{Name: "input_tokens", Learnt: 200_000, Used: 150_000}}, Calls: 40}
	}
	p.tell(runner.Planned{Total: 72})
	for i := range 4 {
		p.tell(runner.EpisodeTurn{Episode: runfolder.Episode{Task: fmt.Sprintf("Scenario-%d", 10+i), Repeat: 1}, Turn: 7, MaxTurns: 100, Command: "kubectl get pods -A -o wide | grep -v Running | sort -k4 -n | head -50 && cat logs/otel-demo/frontend.log"})
	}
	return p
}

// TestLiveDisplayFitsTheTerminal: at 100, 80, 60 and 30 columns the live block (bar, rate
// limits, running episodes) stays one block however often it is redrawn, each of its lines in
// one row, and a finished episode prints above it once. From 60 columns the cost spent and
// projected shows whole (the spend scaled to the 72 episodes).
func TestLiveDisplayFitsTheTerminal(t *testing.T) {
	for _, cols := range []int{100, 80, 60, 30} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			term := newVT(cols)
			p := busyRun(term, &cols)
			for range 5 {
				p.render()
			}
			usd := 1.25
			p.tell(runner.Charged{Charge: runfolder.Charge{Task: "Scenario-10", Repeat: 1, CostUSD: &usd}}) // its calls, in the ledger
			p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-10", Repeat: 1, Status: "ok", Score: 1, Turns: 7, CostUSD: &usd}})
			for range 5 {
				p.render()
			}
			rows := term.rows()
			if n := term.count("/72 episodes"); n != 1 {
				t.Fatalf("%d bars on the screen:\n%s", n, strings.Join(rows, "\n"))
			}
			// The finished episode once above the block, the running ones once in it.
			onScreen(t, term, map[string]int{"Scenario-10 repeat 1: ok": 1, "Scenario-11 r1": 1, "Scenario-10 r1": 0})
			if cols >= 60 && term.count("$1.25 spent, $90.00 projected") != 1 {
				t.Errorf("the cost spent and projected is not whole:\n%s", strings.Join(rows, "\n"))
			}
			block := rows[len(rows)-1-7:] // the bar, the cost and score, two lines of limits, three episodes, and the empty row under them
			for _, r := range block {
				if len(r) >= cols {
					t.Errorf("a line of the block fills the %d columns: %q", cols, r)
				}
			}
		})
	}
}

// onScreen checks how many times each text is on term's screen, each count its own failure,
// and stops the test after showing the screen when one is wrong.
func onScreen(t *testing.T, term *vt, want map[string]int) {
	t.Helper()
	ok := true
	for _, text := range slices.Sorted(maps.Keys(want)) {
		if n := term.count(text); n != want[text] {
			t.Errorf("%q is %d times on the screen, want %d", text, n, want[text])
			ok = false
		}
	}
	if !ok {
		t.Fatalf("the screen:\n%s", strings.Join(term.rows(), "\n"))
	}
}

// TestLiveDisplayFollowsAResize: a terminal narrowed from 100 to 60 columns rewraps the block
// drawn at 100 onto more rows; the next redraw (as on SIGWINCH) erases all of them and fits
// the new width; widened again, the same. One bar is left on the screen each time, and the
// line printed above the block is kept.
func TestLiveDisplayFollowsAResize(t *testing.T) {
	cols := 100
	term := newVT(cols)
	p := busyRun(term, &cols)
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Score: 1, Turns: 3}})
	for _, to := range []int{60, 45, 120, 80} {
		cols = to
		term.resize(to)
		p.render()
		p.render()
		rows := term.rows()
		onScreen(t, term, map[string]int{"/72 episodes": 1, "Scenario-13 r1": 1, "Scenario-1 repeat 1: ok": 1})
		for _, r := range rows[len(rows)-8:] {
			if len(r) >= to {
				t.Errorf("at %d columns, a line of the block fills the row: %q", to, r)
			}
		}
	}
}

// TestPullDisplayFollowsTheWidth: the pull's bar line fits a narrow terminal and stays one
// line through redraws, failures printed above it and resizes.
func TestPullDisplayFollowsTheWidth(t *testing.T) {
	cols := 60
	term := newVT(cols)
	p := newPullProgress(context.Background(), term, false)
	p.screen = liveScreen(term, &cols)
	p.tell(data.PullPlanned{Files: 1200, Bytes: 40 << 30, CachedFiles: 100, CachedBytes: 3 << 30})
	p.tell(data.PullBytes{N: 12 << 30})
	for i := range 6 {
		p.render(false)
		if i == 2 {
			p.tell(data.PullFileDone{Path: "Scenario-2/logs.tsv", Err: errors.New("HTTP 500")})
		}
	}
	cols = 100
	p.render(false)
	cols = 40
	term.resize(40)
	p.render(false)
	p.render(true)
	rows := term.rows()
	onScreen(t, term, map[string]int{"files": 1, "failed: HTTP 500": 1})
	for _, r := range rows {
		if len(r) >= 40 && strings.Contains(r, "files") {
			t.Errorf("the bar line fills the row: %q", r)
		}
	}
}

// TestPullInterruptedCountsNoFailures: files cut short by Ctrl-C are neither done nor failed:
// no "failed" line each, and the counter says what is in the cache.
func TestPullInterruptedCountsNoFailures(t *testing.T) {
	var out strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	p := newPullProgress(ctx, &out, true)
	p.tell(data.PullPlanned{Files: 10, Bytes: 1000, CachedFiles: 2, CachedBytes: 200})
	p.tell(data.PullFileDone{Path: "Scenario-2/a.tsv", Downloaded: 100})
	cancel()
	for range 8 {
		p.tell(data.PullFileDone{Path: "Scenario-2/b.tsv", Err: context.Canceled})
	}
	p.tell(data.PullRetry{URL: "https://hub/resolve/main/x", Attempt: 2, Err: errors.New("interrupt")})
	if done, total := p.inCache(); done != 3 {
		t.Errorf("%d files in the cache, want 3 (the 2 there before and the 1 done)", done)
	} else if total != 10 {
		t.Errorf("%d files in all, want 10", total)
	}
	if out.String() != "" {
		t.Errorf("printed for an interrupted pull:\n%s", out.String())
	}
}

// TestScreenIsLiveOnATerminalOnly: a file that is no terminal (a log file, /dev/null, a
// pipe) gets plain lines; so does a terminal with --no-progress.
func TestScreenIsLiveOnATerminalOnly(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, f := range map[string]*os.File{"file": file, "null": null, "pipe": w} {
		if newScreen(f, false).live {
			t.Errorf("%s: a live display", name)
		}
	}
	if newScreen(&strings.Builder{}, false).live {
		t.Error("a buffer: a live display")
	}
}
