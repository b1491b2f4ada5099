package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// screen is where a progress display writes. Live, it is a terminal, on which the display
// keeps a block of lines at the bottom and redraws it in place, each line cut to the width
// the terminal has at that redraw; otherwise (not a terminal, or --no-progress) the display
// prints plain lines, as a log wants them.
type screen struct {
	w     io.Writer
	live  bool
	width func() int // the terminal's columns now; live only
	drawn []int      // the columns of each line of the block on the terminal
}

// defaultWidth is the width of a terminal that does not tell its own (a pseudo-terminal
// never sized).
const defaultWidth = 80

// newScreen is live when w is a terminal and plain (--no-progress) is not asked for.
func newScreen(w io.Writer, plain bool) *screen {
	f, ok := w.(*os.File)
	if !ok || plain {
		return &screen{w: w}
	}
	if _, ok := terminalWidth(f); !ok {
		return &screen{w: w}
	}
	return &screen{w: w, live: true, width: func() int {
		if cols, _ := terminalWidth(f); cols > 0 {
			return cols
		}
		return defaultWidth
	}}
}

// columns is the width of the terminal w is; 0 when w is none (a pipe or a file, which
// keeps a table's rows whole for the programs that read them).
func columns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, ok := terminalWidth(f); ok {
			return cols
		}
	}
	return 0
}

// clear erases the block, leaving the cursor where its first line was. It goes up the rows
// the block's lines take at the terminal's width now: more than one each when a narrower
// terminal rewrapped them.
func (s *screen) clear() {
	if len(s.drawn) == 0 {
		return
	}
	cols, rows := s.width(), 0
	for _, w := range s.drawn {
		rows += max(1, (w+cols-1)/cols)
	}
	fmt.Fprintf(s.w, "\033[%dA\r\033[J", rows)
	s.drawn = s.drawn[:0]
}

// draw writes the block below the cursor, each line (sanitized text) cut to one column less
// than the terminal has: a line that reaches the last column leaves the cursor where
// terminals disagree.
func (s *screen) draw(lines []string) {
	cols := s.width()
	var b strings.Builder
	for _, l := range lines {
		l = termtext.Clip(l, cols-1)
		b.WriteString(l)
		b.WriteByte('\n')
		s.drawn = append(s.drawn, termtext.Width(l))
	}
	// In one write, so the block does not flicker; stderr's errors have nowhere to go.
	_, _ = io.WriteString(s.w, b.String())
}

// keep leaves the block on the terminal as it is: it is not redrawn any more.
func (s *screen) keep() { s.drawn = s.drawn[:0] }

// refresh calls fn every interval, and at once when a live screen's terminal is resized,
// until stop is closed.
func (s *screen) refresh(interval time.Duration, stop <-chan struct{}, fn func()) {
	resized := make(chan os.Signal, 1)
	if s.live {
		notifyResize(resized)
		defer stopResize(resized)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-resized:
		}
		fn()
	}
}

// withBar puts a progress bar before a line, as wide as a terminal of cols columns leaves
// room for: at most 24 columns, none when fewer than 10 are left.
func withBar(done, total int64, line string, cols int) string {
	room := cols - 1 - termtext.Width(line) - len(" []")
	if room < 8 {
		return line
	}
	return bar(done, total, min(room, 24)) + " " + line
}

func bar(done, total int64, width int) string {
	filled := width
	if total > 0 {
		filled = int(float64(width) * float64(min(done, total)) / float64(total))
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// pullProgress renders a pull: on a live screen a line with a bar (files and bytes, rate,
// ETA) redrawn in place, else a line every interval. A file cut short by an interruption of
// the pull (ctx) is neither done nor failed: the next pull fetches it.
type pullProgress struct {
	ctx      context.Context
	screen   *screen
	interval time.Duration

	files, doneFiles, cachedFiles atomic.Int64
	bytes, doneBytes, cachedBytes atomic.Int64
	start                         time.Time
	stop                          chan struct{}
	wg                            sync.WaitGroup
	mu                            sync.Mutex // serialises writes
}

func newPullProgress(ctx context.Context, w io.Writer, plain bool) *pullProgress {
	p := &pullProgress{ctx: ctx, screen: newScreen(w, plain), interval: 5 * time.Second, start: time.Now(),
		stop: make(chan struct{})}
	if p.screen.live {
		p.interval = 200 * time.Millisecond
	}
	return p
}

// tell renders one event of a pull (data.PullOptions.Progress).
func (p *pullProgress) tell(e data.Event) {
	switch e := e.(type) {
	case data.PullPlanned:
		p.files.Add(int64(e.Files))
		p.bytes.Add(e.Bytes)
		p.cachedFiles.Add(int64(e.CachedFiles))
		p.cachedBytes.Add(e.CachedBytes)
	case data.PullBytes:
		p.doneBytes.Add(e.N)
	case data.PullFileDone:
		if e.Err != nil && p.ctx.Err() != nil {
			return // interrupted: left for the next pull
		}
		p.doneFiles.Add(1)
		if e.Err != nil {
			p.println(fmt.Sprintf("failed: %v", e.Err))
		}
	case data.PullRetry:
		if p.ctx.Err() != nil {
			return
		}
		p.println(fmt.Sprintf("retry %d %s: %s: %v", e.Attempt, nextAttempt(time.Now(), e.Wait), shortURL(e.URL), e.Err))
	}
}

// imageProgress prints to w a line for each pull that preparing a sandbox image makes (nil
// when w is nil: nothing to print to).
func imageProgress(w io.Writer) func(sandbox.Event) {
	if w == nil {
		return nil
	}
	return func(e sandbox.Event) {
		switch e := e.(type) {
		case sandbox.PullingImage:
			fmt.Fprintf(w, "pulling %s: %d layers, %.1f MB\n", e.Ref, e.Layers, float64(e.Bytes)/1e6)
		case sandbox.PullingThroughDaemon:
			fmt.Fprintf(w, "pulling %s through the Docker daemon\n", e.Ref)
		}
	}
}

// nextAttempt says when a retry waiting wait from now goes: "in 4s (at 14:03:05)".
func nextAttempt(now time.Time, wait time.Duration) string {
	return fmt.Sprintf("in %s (at %s)", wait.Round(100*time.Millisecond), now.Add(wait).Format(time.TimeOnly))
}

func shortURL(u string) string {
	if i := strings.Index(u, "/resolve/"); i >= 0 {
		return u[i+len("/resolve/"):]
	}
	return u
}

// inCache is how many of the pull's files are in the cache so far, and of how many.
func (p *pullProgress) inCache() (done, total int64) {
	return p.doneFiles.Load() + p.cachedFiles.Load(), p.files.Load()
}

// Start begins periodic rendering.
func (p *pullProgress) Start() {
	p.wg.Go(func() { p.screen.refresh(p.interval, p.stop, func() { p.render(false) }) })
}

// Stop ends rendering with a final line.
func (p *pullProgress) Stop() {
	close(p.stop)
	p.wg.Wait()
	p.render(true)
}

// println prints a line above the bar, sanitized: it quotes file names and errors from the Hub.
func (p *pullProgress) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.screen.live {
		p.screen.clear()
	}
	printLine(p.screen.w, "%s", s)
}

func (p *pullProgress) render(final bool) {
	files, bytes := p.files.Load(), p.bytes.Load()
	if files == 0 {
		return
	}
	done, _ := p.inCache()
	got := p.doneBytes.Load() + p.cachedBytes.Load()
	elapsed := time.Since(p.start).Seconds()
	rate := float64(p.doneBytes.Load()) / max(elapsed, 0.001)
	eta := "-"
	if rate > 0 && bytes > got {
		eta = (time.Duration(float64(bytes-got)/rate) * time.Second).Round(time.Second).String()
	}
	line := fmt.Sprintf("%d/%s  %s/%s  %s/s  ETA %s", done, english.Count(int(files), "file"), humanBytes(got),
		humanBytes(bytes), humanBytes(int64(rate)), eta)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.screen.live {
		p.screen.clear()
		p.screen.draw([]string{withBar(got, bytes, line, p.screen.width())})
		if final {
			p.screen.keep()
		}
		return
	}
	if !final {
		fmt.Fprintln(p.screen.w, "pull: "+line)
	}
}

// humanBytes prints a size with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
