package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// openPTY opens a pseudo-terminal pair (/dev/ptmx and its peer) sized cols x 24.
func openPTY(t *testing.T, cols int) (master, peer *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	peer, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return master, peer
}

// TestScreenReadsTheTerminalsWidth: on a pseudo-terminal the screen is live and its width is
// the terminal's, read again after a resize; with --no-progress it is plain.
func TestScreenReadsTheTerminalsWidth(t *testing.T) {
	master, peer := openPTY(t, 61)
	s := newScreen(peer, false)
	if !s.live || s.width() != 61 {
		t.Fatalf("live %v, width %d; want a live screen 61 columns wide", s.live, s.width())
	}
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 137}); err != nil {
		t.Fatal(err)
	}
	if s.width() != 137 {
		t.Fatalf("after a resize to 137 columns the width is %d", s.width())
	}
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{}); err != nil {
		t.Fatal(err)
	}
	if s.width() != defaultWidth {
		t.Fatalf("a terminal that tells no width: %d columns, want %d", s.width(), defaultWidth)
	}
	if newScreen(peer, true).live {
		t.Fatal("--no-progress on a terminal: a live display")
	}
}

// TestScreenRedrawsOnSIGWINCH: a resize redraws at once, not at the next interval.
func TestScreenRedrawsOnSIGWINCH(t *testing.T) {
	_, peer := openPTY(t, 80)
	s := newScreen(peer, false)
	stop, redrawn := make(chan struct{}), make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.refresh(time.Hour, stop, func() {
			select {
			case redrawn <- struct{}{}:
			default:
			}
		})
	}()
	// The signal is sent until it is heard: refresh starts listening when it starts.
	for heard, tries := false, 0; !heard; tries++ {
		if tries == 1000 {
			t.Fatal("no redraw after SIGWINCH")
		}
		syscall.Kill(os.Getpid(), syscall.SIGWINCH)
		select {
		case <-redrawn:
			heard = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(stop)
	<-done
}

// TestRunTotalsFitTheTerminal: the final table of a run, written to a pseudo-terminal and
// shown by the terminal emulator, keeps each of its lines on one row from 60 columns: a table
// when it fits, three lines a task when it does not, with the same counts. To a pipe or a
// file it is the table, whatever its width.
func TestRunTotalsFitTheTerminal(t *testing.T) {
	run, err := report.Load(filepath.Join("..", "..", "testdata", "runs", "qwen"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cols  int
		table bool
	}{{200, true}, {80, false}, {60, false}} {
		t.Run(fmt.Sprint(c.cols), func(t *testing.T) {
			master, peer := openPTY(t, c.cols)
			shown := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(master) // EIO once the peer is closed and all is read
				shown <- b
			}()
			renderRunTotals(peer, run, columns(peer))
			peer.Close()
			term := newVT(c.cols)
			term.Write(<-shown)
			for _, l := range term.lines {
				if len(l) >= c.cols {
					t.Errorf("at %d columns a line takes more than a row: %q", c.cols, string(l))
				}
			}
			text := strings.Join(term.rows(), "\n")
			if got := strings.Contains(text, "INPUT TOKENS"); got != c.table {
				t.Errorf("at %d columns a table: %v, want %v:\n%s", c.cols, got, c.table, text)
			}
			textcheck.Has(t, "the totals", text, "922,541", "2,410,337", "ALL")
		})
	}
	var piped bytes.Buffer
	renderRunTotals(&piped, run, columns(&piped))
	textcheck.Has(t, "the totals to a pipe", piped.String(), "INPUT TOKENS")
}

// onTerminal is what render writes to a pseudo-terminal cols wide, as the terminal emulator
// shows it: each line on the rows it takes.
func onTerminal(t *testing.T, cols int, render func(w io.Writer, cols int)) *vt {
	t.Helper()
	master, peer := openPTY(t, cols)
	shown := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the peer is closed and all is read
		shown <- b
	}()
	render(peer, columns(peer))
	peer.Close()
	term := newVT(cols)
	term.Write(<-shown)
	return term
}

// TestTablesFitTheTerminal: the text of report, analyze, models, doctor and tasks validate,
// written to a pseudo-terminal of 80 and 60 columns and shown by the terminal emulator, keeps
// each line on one row (tables folded, a block a row, long lines wrapped between words) and
// every value; to a pipe each is as wide as it needs, tables as columns.
func TestTablesFitTheTerminal(t *testing.T) {
	var runs []*report.Run
	for _, name := range []string{"opus", "qwen"} {
		r, err := report.Load(filepath.Join("..", "..", "testdata", "runs", name))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	overviews := report.Overviews(runs)
	models, err := presetsOutput()
	if err != nil {
		t.Fatal(err)
	}
	ntam := 0.4375
	analysed := []*analysis.Run{{Dir: "runs/claude-opus-4-7-max-20261123", Model: "anthropic/claude-opus-4-7",
		Summary: analysis.Summary{Episodes: 36, Score: 0.5, PartialCredit: 0.625, NTAM: ntam}}}
	guarantee := sandbox.Guarantee{Name: "memory-limit", Detail: "each process is bounded by RLIMIT_AS to the --memory-limit, " +
		"not the episode's processes together (that needs root or a delegated cgroup)"}
	doctor := doctorReport{Backends: []backendReport{{Name: "bwrap", OK: true, Guarantees: []sandbox.Guarantee{guarantee}}},
		Selected: "bwrap", Differences: []string{"python3: missing (the reference sandbox has Python 3.12 with drain3 0.9.11, numpy 2.4.5, pandas 3.0.3)"}}
	reports := []validate.Report{{Task: "Scenario-1000", Findings: []validate.Finding{{Level: validate.Warning, Code: "gt-no-match",
		File: "ground_truth.yaml", Line: 12, Message: "root cause group flagd-config matches no object of the snapshot; the closest are " +
			"otel-demo/ConfigMap/flagd-config-v2, otel-demo/Deployment/flagd and otel-demo/Service/flagd"}}}}
	for _, c := range []struct {
		name   string
		render func(w io.Writer, cols int)
		wants  []string
	}{
		{"report", func(w io.Writer, cols int) { renderReportText(w, overviews, cols) }, []string{"DIFFERENCE", "GRADING"}},
		{"analyze", func(w io.Writer, cols int) { renderAnalysisText(w, analysed, cols) }, []string{"NTAM: 0.438", "0.625"}},
		{"models", func(w io.Writer, cols int) { renderModelsText(w, models, cols) }, []string{"claude-opus-4-7-max", "$/TASK"}},
		{"doctor", func(w io.Writer, cols int) { renderDoctor(w, doctor, cols) }, []string{"delegated", "pandas 3.0.3)"}},
		{"tasks validate", func(w io.Writer, cols int) { renderReports(w, reports, cols) }, []string{"otel-demo/Service/flagd"}},
	} {
		for _, cols := range []int{80, 60} {
			t.Run(fmt.Sprintf("%s/%d", c.name, cols), func(t *testing.T) {
				term := onTerminal(t, cols, c.render)
				for _, l := range term.lines {
					if len(l) >= cols {
						t.Errorf("a line takes more than a row: %q", string(l))
					}
				}
				textcheck.Has(t, c.name, strings.Join(term.rows(), "\n"), c.wants...)
			})
		}
		var piped bytes.Buffer
		c.render(&piped, columns(&piped))
		if widestLine(piped.String()) < 100 {
			t.Errorf("%s to a pipe: %d columns at most, want its table unfolded:\n%s", c.name, widestLine(piped.String()), piped.String())
		}
	}
}
