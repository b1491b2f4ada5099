package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aa-grade/aa-grade/data"
)

// isTerminal reports whether w is a character device (a terminal), so progress can redraw
// one line in place; otherwise it prints plain periodic lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// pullProgress renders a pull: a bar redrawn in place on a terminal (files and bytes, rate,
// ETA), a line every interval otherwise.
type pullProgress struct {
	w        io.Writer
	terminal bool
	interval time.Duration

	files, doneFiles, cachedFiles atomic.Int64
	bytes, doneBytes, cachedBytes atomic.Int64
	start                         time.Time
	stop                          chan struct{}
	wg                            sync.WaitGroup
	mu                            sync.Mutex // serialises writes
}

func newPullProgress(w io.Writer) *pullProgress {
	p := &pullProgress{w: w, terminal: isTerminal(w), interval: 5 * time.Second, start: time.Now(), stop: make(chan struct{})}
	if p.terminal {
		p.interval = 200 * time.Millisecond
	}
	return p
}

// callbacks connects the renderer to a pull.
func (p *pullProgress) callbacks() data.Progress {
	return data.Progress{
		Planned: func(files int, bytes int64, cachedFiles int, cachedBytes int64) {
			p.files.Add(int64(files))
			p.bytes.Add(bytes)
			p.cachedFiles.Add(int64(cachedFiles))
			p.cachedBytes.Add(cachedBytes)
		},
		Bytes: func(n int64) { p.doneBytes.Add(n) },
		FileDone: func(path string, _ int64, err error) {
			p.doneFiles.Add(1)
			if err != nil {
				p.println(fmt.Sprintf("failed: %v", err))
			}
		},
		Retry: func(what string, attempt int, wait time.Duration, err error) {
			p.println(fmt.Sprintf("retry %d in %s: %s: %v", attempt, wait.Round(100*time.Millisecond), shortURL(what), err))
		},
	}
}

func shortURL(u string) string {
	if i := strings.Index(u, "/resolve/"); i >= 0 {
		return u[i+len("/resolve/"):]
	}
	return u
}

// Start begins periodic rendering.
func (p *pullProgress) Start() {
	p.wg.Go(func() { every(p.interval, p.stop, func() { p.render(false) }) })
}

// every calls fn at each interval until stop is closed.
func every(interval time.Duration, stop <-chan struct{}, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
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
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
	}
	printLine(p.w, "%s", s)
}

func (p *pullProgress) render(final bool) {
	files, bytes := p.files.Load(), p.bytes.Load()
	if files == 0 {
		return
	}
	done := p.doneFiles.Load() + p.cachedFiles.Load()
	got := p.doneBytes.Load() + p.cachedBytes.Load()
	elapsed := time.Since(p.start).Seconds()
	rate := float64(p.doneBytes.Load()) / max(elapsed, 0.001)
	eta := "-"
	if rate > 0 && bytes > got {
		eta = (time.Duration(float64(bytes-got)/rate) * time.Second).Round(time.Second).String()
	}
	line := fmt.Sprintf("%d/%d files  %s/%s  %s/s  ETA %s", done, files, humanBytes(got), humanBytes(bytes), humanBytes(int64(rate)), eta)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s %s", bar(got, bytes, 24), line)
		if final {
			fmt.Fprintln(p.w)
		}
		return
	}
	if !final {
		fmt.Fprintln(p.w, "pull: "+line)
	}
}

func bar(done, total int64, width int) string {
	filled := width
	if total > 0 {
		filled = int(float64(width) * float64(min(done, total)) / float64(total))
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
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
