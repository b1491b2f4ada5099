package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestAnalyzeSubmissions: another harness's submissions get partial credit and classes, and
// no investigation.
func TestAnalyzeSubmissions(t *testing.T) {
	r := aaGrade(t, nil, "analyze", "--json", "--dataset", "testdata/grade/dataset", "testdata/grade/submissions")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var out []struct {
		Model    string `json:"model"`
		Episodes []struct {
			Task           string `json:"task"`
			Status         string `json:"status"`
			Trajectory     bool   `json:"trajectory"`
			FirstHitTurn   *int   `json:"first_hit_turn"`
			FalsePositives []struct {
				Entity, Class string
			} `json:"false_positives"`
		} `json:"episodes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	fps := 0
	for _, e := range out[0].Episodes {
		if e.Trajectory || e.FirstHitTurn != nil {
			t.Errorf("%s: an investigation without a trajectory", e.Task)
		}
		fps += len(e.FalsePositives)
	}
	if out[0].Model != "" {
		t.Errorf("model %q, want none (submissions have no model)", out[0].Model)
	}
	if len(out[0].Episodes) == 0 {
		t.Errorf("no episodes:\n%s", r.stdout)
	}
	if fps == 0 {
		t.Errorf("no false positives:\n%s", r.stdout)
	}
}

// TestAnalyzeBadInput: one clear line and the exit code of each kind of bad input.
func TestAnalyzeBadInput(t *testing.T) {
	corrupt := t.TempDir()
	if err := os.WriteFile(filepath.Join(corrupt, "run.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no folder", []string{"analyze"}, 2, "at least one RUN"},
		{"missing folder", []string{"analyze", filepath.Join(t.TempDir(), "nope")}, 2, "no such file"},
		{"corrupt run", []string{"analyze", corrupt}, 1, "corrupt run folder"},
		{"NTAM shrink rate", []string{"analyze", "--ntam-omega", "1.5", corrupt}, 2, "--ntam-omega 1.5: must be above 0 and at most 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := aaGrade(t, nil, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d", r.code, c.code)
			}
			if n := strings.Count(r.stderr, "\n"); n != 1 {
				t.Errorf("stderr has %d lines, want one: %q", n, r.stderr)
			}
			textcheck.Has(t, "stderr", r.stderr, c.want)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}

// TestAnalyzeNTAM: every graded episode has its NTAM, and the parameters change it: with tau
// near 0 an answer that is not a root cause earns next to nothing, so no episode's NTAM rises.
func TestAnalyzeNTAM(t *testing.T) {
	ntam := func(extra ...string) map[string]float64 {
		t.Helper()
		r := aaGrade(t, nil, append([]string{"analyze", "--json", "--dataset", "testdata/grade/dataset"}, append(extra, "testdata/grade/submissions")...)...)
		var out []struct {
			Summary struct {
				NTAM *float64 `json:"ntam"`
			} `json:"summary"`
			Episodes []struct {
				Task   string   `json:"task"`
				Repeat int      `json:"repeat"`
				NTAM   *float64 `json:"ntam"`
			} `json:"episodes"`
		}
		r.wantExit(t, 0)
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		if out[0].Summary.NTAM == nil {
			t.Fatalf("no NTAM in the summary:\n%s", r.stdout)
		}

		byEpisode := map[string]float64{}
		for _, e := range out[0].Episodes {
			byEpisode[fmt.Sprintf("%s/%d", e.Task, e.Repeat)] = *e.NTAM
		}
		return byEpisode
	}
	defaults, steep := ntam(), ntam("--ntam-tau", "0.01")
	changed := 0
	for ep, v := range defaults {
		if v < 0 || v > 1 {
			t.Errorf("%s: NTAM %v by default, want 0 to 1", ep, v)
		}
		if steep[ep] > v+1e-12 {
			t.Errorf("%s: NTAM %v with tau 0.01, want at most the default's %v", ep, steep[ep], v)
		}
		if steep[ep] < v-1e-9 {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("tau changes no episode's NTAM: %v", defaults)
	}
}
