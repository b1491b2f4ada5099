package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/fakehub"
)

// interopDir holds the real JavaScript Hugging Face client, installed by `npm ci` in
// interop/ (.ci/run does it). Without it the test skips, except under CI.
func interopDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(moduleRoot, "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@huggingface", "hub")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@huggingface/hub is not installed in %s (npm ci there)", dir)
		}
		t.Skip("@huggingface/hub not installed; run npm ci in interop/")
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
	dir := interopDir(t)
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
	dir := interopDir(t)
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
	if len(scan.Repos) != 1 || scan.Repos[0].ID.Name != sampleRepo || scan.Repos[0].ID.Type != "dataset" ||
		len(scan.Repos[0].Revisions) != 1 || scan.Repos[0].Revisions[0].CommitOid != commit ||
		strings.Join(scan.Repos[0].Revisions[0].Refs, ",") != "main" {
		t.Fatalf("scanCacheDir saw %s", out)
	}
}
