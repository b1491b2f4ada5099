package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// TestFinish: the rate limits a run met go into its run.json and the reports are written; a
// record that fails leaves the reports written and says why; a model that met no limit and
// made no call leaves run.json as it was.
func TestFinish(t *testing.T) {
	dir := copyRun(t, opusDir)
	folder, err := runfolder.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close()
	r, err := Finish(dir, folder, ratelimit.Status{Calls: 7, RateLimited: 2}, nil)
	if err != nil || r.RateLimitsErr != nil {
		t.Fatalf("finish: %v, rate limits: %v", err, r.RateLimitsErr)
	}
	h, err := runfolder.ReadHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.RateLimits == nil {
		t.Fatal("run.json records no rate limits")
	}
	if n := h.RateLimits.Calls; n != 7 {
		t.Errorf("run.json's rate limits: %d calls, want 7", n)
	}
	if n := h.RateLimits.RateLimited; n != 2 {
		t.Errorf("run.json's rate limits: %d rate limited, want 2", n)
	}

	if _, err := os.Stat(filepath.Join(dir, MarkdownFile)); err != nil {
		t.Errorf("no report.md: %v", err)
	}

	// The folder's run.json is gone (the record fails) but the reports of dir are written.
	gone := &runfolder.Folder{Dir: t.TempDir()}
	again := copyRun(t, opusDir)
	r, err = Finish(again, gone, ratelimit.Status{Calls: 1}, nil)
	if err != nil || r.RateLimitsErr == nil {
		t.Fatalf("a failed record: err %v, rate limits %v; want the reports written and the record's error kept", err, r.RateLimitsErr)
	}
	if _, err := os.Stat(filepath.Join(again, HTMLFile)); err != nil {
		t.Errorf("no report.html after a failed record: %v", err)
	}

	idle := copyRun(t, opusDir)
	before, _ := os.ReadFile(filepath.Join(idle, runfolder.HeaderFile))
	if _, err := Finish(idle, nil, ratelimit.Status{}, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(idle, runfolder.HeaderFile)); string(after) != string(before) {
		t.Errorf("an idle model's finish rewrote run.json:\n%s", after)
	}

	if _, err := Finish(t.TempDir(), nil, ratelimit.Status{}, nil); err == nil {
		t.Error("a folder that is no run finished")
	}
}
