package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
)

// interopDir holds the real peers (the JavaScript Hugging Face client, DuckDB), installed by
// `npm ci` in interop/ (.ci/run does it). Without the package the test skips, except under CI.
func interopDir(t *testing.T, pkg string) string {
	t.Helper()
	dir := filepath.Join(moduleRoot, "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed in %s (npm ci there)", pkg, dir)
		}
		t.Skipf("%s not installed; run npm ci in interop/", pkg)
	}
	return dir
}

func node(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// TestInteropJavaScriptFillsOurCache: @huggingface/hub's snapshotDownload fills a cache from
// the fake Hub; aa-grade then uses it offline as is.
func TestInteropJavaScriptFillsOurCache(t *testing.T) {
	dir := interopDir(t, "@huggingface/hub")
	h := fakehub.New()
	defer h.Close()
	h.Token = "hf_interop"
	files := fakehub.SampleDataset(2, 300<<10)
	commit := h.ServeSample(sampleRepo, files)
	cache := t.TempDir()
	out := node(t, dir, []string{"HF_ENDPOINT=" + h.URL, "HF_TOKEN=hf_interop"}, "snapshot.mjs", cache, sampleRepo, "main")
	if !strings.Contains(out, commit) {
		t.Fatalf("snapshotDownload returned %q, want the snapshot of %s", out, commit)
	}
	env := append(hubEnv(h, cache), "HF_HUB_OFFLINE=1")
	if r := aaGrade(t, env, "data", "verify"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("checked %d files", len(files))) {
		t.Fatalf("verify of the JavaScript cache: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := aaGrade(t, env, "data", "ls"); r.code != 0 || !strings.Contains(r.stdout, "Scenario-2") {
		t.Fatalf("ls of the JavaScript cache: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := aaGrade(t, env, "data", "pull"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d already cached", len(files))) {
		t.Fatalf("offline pull of the JavaScript cache: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestInteropJavaScriptReadsOurCache: aa-grade pulls into a cache; @huggingface/hub's
// scanCacheDir reads it without a warning and sees the revision and its ref.
func TestInteropJavaScriptReadsOurCache(t *testing.T) {
	dir := interopDir(t, "@huggingface/hub")
	h := fakehub.New()
	defer h.Close()
	commit := h.ServeSample(sampleRepo, fakehub.SampleDataset(2, 300<<10))
	cache := t.TempDir()
	if r := aaGrade(t, hubEnv(h, cache), "data", "pull"); r.code != 0 {
		t.Fatalf("pull: exit %d\n%s", r.code, r.stderr)
	}
	var scan struct {
		Repos []struct {
			ID struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"id"`
			Revisions []struct {
				CommitOid string   `json:"commitOid"`
				Refs      []string `json:"refs"`
			} `json:"revisions"`
		} `json:"repos"`
		Warnings []struct {
			Message string `json:"message"`
		} `json:"warnings"`
	}
	out := node(t, dir, nil, "scan.mjs", cache)
	if err := json.Unmarshal([]byte(out), &scan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(scan.Warnings) != 0 {
		t.Fatalf("scanCacheDir warned: %+v", scan.Warnings)
	}
	if len(scan.Repos) != 1 {
		t.Fatalf("scanCacheDir saw %d repos, want 1: %s", len(scan.Repos), out)
	}
	repo := scan.Repos[0]
	if got, want := [2]string{repo.ID.Type, repo.ID.Name}, [2]string{"dataset", sampleRepo}; got != want {
		t.Errorf("scanCacheDir saw the repo %q, want %q", got, want)
	}
	if len(repo.Revisions) != 1 {
		t.Fatalf("scanCacheDir saw %d revisions, want 1: %s", len(repo.Revisions), out)
	}
	if rev := repo.Revisions[0]; rev.CommitOid != commit {
		t.Errorf("scanCacheDir saw the revision %s, want %s", rev.CommitOid, commit)
	}
	if refs := strings.Join(repo.Revisions[0].Refs, ","); refs != "main" {
		t.Errorf("scanCacheDir saw the refs %q, want main", refs)
	}
}

// TestInteropDuckDBReadsResultsParquet: DuckDB reads the results.parquet of a real run (the
// baseline: no prices, so every cost is null) and of a priced run with errors, and sees the
// episodes, types and totals the Go reader sees.
func TestInteropDuckDBReadsResultsParquet(t *testing.T) {
	dir := interopDir(t, "@duckdb/node-api")
	demo := filepath.Join(t.TempDir(), "demo")
	if r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline",
		"--tasks", "901,904", "--repeats", "1", "--out", demo); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	// Two fixtures beside the real run: one with prices (costs known) and one without (null).
	var fixtures []string
	for _, name := range []string{"opus", "qwen"} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(moduleRoot, "testdata", "runs", name))); err != nil {
			t.Fatal(err)
		}
		if _, err := report.WriteFolder(dir, nil); err != nil {
			t.Fatal(err)
		}
		fixtures = append(fixtures, dir)
	}
	priced, unpriced := fixtures[0], fixtures[1]
	var seen []struct {
		Columns  []struct{ Name, Type string } `json:"columns"`
		Rows     int                           `json:"rows"`
		Score    float64                       `json:"score"`
		NullCost int                           `json:"null_cost"`
		CostUSD  *float64                      `json:"cost_usd"`
		Input    int64                         `json:"input_tokens"`
		Episodes string                        `json:"episodes"`
	}
	out := node(t, dir, nil, "duckdb.mjs", filepath.Join(demo, report.ParquetFile), filepath.Join(priced, report.ParquetFile),
		filepath.Join(unpriced, report.ParquetFile))
	if err := json.Unmarshal([]byte(out), &seen); err != nil || len(seen) != 3 {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, runDir := range []string{demo, priced, unpriced} {
		run, err := report.Load(runDir)
		if err != nil {
			t.Fatal(err)
		}
		var score, cost float64
		var input int64
		var episodes []string
		nullCost := 0
		for _, e := range run.Results {
			score += e.Score
			input += e.Tokens.Input
			episodes = append(episodes, fmt.Sprintf("%s/%d/%s", e.Task, e.Repeat, e.Status))
			if e.CostUSD == nil {
				nullCost++
			} else {
				cost += *e.CostUSD
			}
		}
		// SQL's sum of nothing but nulls is null.
		d, allNull := seen[i], nullCost == len(run.Results)
		if d.Rows != len(run.Results) {
			t.Errorf("%s: DuckDB saw %d rows, Go %d", runDir, d.Rows, len(run.Results))
		}
		if math.Abs(d.Score-score) > 1e-9 {
			t.Errorf("%s: DuckDB saw the score %v, Go %v", runDir, d.Score, score)
		}
		if d.NullCost != nullCost {
			t.Errorf("%s: DuckDB saw %d null costs, Go %d", runDir, d.NullCost, nullCost)
		}
		if d.Input != input {
			t.Errorf("%s: DuckDB saw %d input tokens, Go %d", runDir, d.Input, input)
		}
		switch {
		case d.CostUSD == nil && !allNull:
			t.Errorf("%s: DuckDB saw the cost null, Go %v", runDir, cost)
		case d.CostUSD != nil && allNull:
			t.Errorf("%s: DuckDB saw the cost %v, Go null", runDir, *d.CostUSD)
		case d.CostUSD != nil && math.Abs(*d.CostUSD-cost) > 1e-9:
			t.Errorf("%s: DuckDB saw the cost %v, Go %v", runDir, *d.CostUSD, cost)
		}
		if want := strings.Join(episodes, ","); d.Episodes != want {
			t.Errorf("%s: DuckDB saw the episodes %s, Go %s", runDir, d.Episodes, want)
		}
		types := map[string]string{}
		for _, c := range d.Columns {
			types[c.Name] = c.Type
		}
		for column, want := range map[string]string{"task": "VARCHAR", "repeat": "BIGINT", "score": "DOUBLE", "cost_usd": "DOUBLE",
			"reasoning_tokens": "BIGINT", "matcher": "VARCHAR", "web_searches": "BIGINT", "worst_case": "BOOLEAN"} {
			if types[column] != want {
				t.Errorf("%s: DuckDB column %s of type %q, want %s", runDir, column, types[column], want)
			}
		}
		if len(types) != 27 {
			t.Errorf("%s: DuckDB saw %d columns, want 27: %v", runDir, len(types), types)
		}
	}
	// builtin/baseline costs a known 0; the unpriced fixture has tokens at unknown prices.
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"rows of the baseline run", seen[0].Rows, 2}, {"rows of the priced run", seen[1].Rows, 6},
		{"null costs of the baseline run", seen[0].NullCost, 0}, {"null costs of the priced run", seen[1].NullCost, 0},
	} {
		if c.got != c.want {
			t.Errorf("fixtures changed: %d %s, want %d", c.got, c.what, c.want)
		}
	}
	if c := seen[0].CostUSD; c == nil {
		t.Errorf("fixtures changed: the baseline run's cost is null, want a known 0")
	} else if *c != 0 {
		t.Errorf("fixtures changed: the baseline run costs %v, want 0", *c)
	}
	if seen[2].NullCost == 0 {
		t.Errorf("fixtures changed: the unpriced run has no null cost, want some")
	}
}
