package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
)

const sampleRepo = "ArtificialAnalysis/ITBench-AA"

// hubEnv points the binary at a fake Hub and a cache of the test's own.
func hubEnv(h *fakehub.Hub, cache string) []string {
	return []string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache, "HF_TOKEN=hf_test"}
}

func TestDataPullLsVerifyRepair(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files := fakehub.SampleDataset(3, 256<<10)
	commit := h.ServeSample(sampleRepo, files)
	cache := t.TempDir()
	env := hubEnv(h, cache)

	r := aaGrade(t, env, "data", "pull")
	r.wantExit(t, 0)
	if !textcheck.Has(t, "the pull's stdout", r.stdout, "at commit "+commit, fmt.Sprintf("%d files", len(files))) {
		t.FailNow()
	}
	if !strings.Contains(r.stderr, "pull: ") && !strings.Contains(r.stdout, "downloaded") {
		t.Errorf("no progress or summary:\n%s", r.stderr)
	}

	r = aaGrade(t, env, "data", "ls", "--json")
	var rows []taskRow
	r.wantExit(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("ls: %v\n%s", err, r.stdout)
	}
	if len(rows) != 3 {
		t.Fatalf("ls: %d rows, want 3\n%s", len(rows), r.stdout)
	}
	got := rows[0]
	got.Bytes, got.Problem = 0, "" // not checked
	if want := (taskRow{Task: "Scenario-1", Files: 2, RootCauses: 1, Status: "ok", Split: "public"}); got != want {
		t.Fatalf("ls row = %+v, want %+v (bytes and problem not checked)", rows[0], want)
	}

	// Offline, everything is served from the cache.
	r = aaGrade(t, append(env, "HF_HUB_OFFLINE=1"), "data", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "Scenario-3") {
		t.Fatalf("offline ls: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	if r = aaGrade(t, env, "data", "verify"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("checked %d files", len(files))) {
		t.Fatalf("verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Corrupt one blob and delete one link: verify names both and exits 1; repair fixes them.
	tsv := "sre/Scenario-2/k8s_events_raw.tsv"
	c := hub.Cache{Dir: cache}
	blob := c.BlobPath(sampleRepo, fakehub.ETag(files[tsv]))
	if err := os.WriteFile(blob, bytes.Repeat([]byte("x"), len(files[tsv].Content)), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := "sre/Scenario-3/ground_truth.yaml"
	if err := os.Remove(filepath.Join(c.SnapshotDir(sampleRepo, commit), gone)); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"HF_HUB_OFFLINE=1"}} {
		r = aaGrade(t, append(env, extra...), "data", "verify")
		wantMissing := extra == nil // offline, only linked files are known
		r.wantExit(t, 1)
		textcheck.Has(t, fmt.Sprintf("verify %v", extra), r.stdout, "corrupt: "+tsv)
		if missing := strings.Contains(r.stdout, "missing: "+gone); missing != wantMissing {
			t.Errorf("verify %v: says %s missing %v, want %v", extra, gone, missing, wantMissing)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if r = aaGrade(t, env, "data", "verify", "--repair"); r.code != 0 || !strings.Contains(r.stdout, "repaired 2 files") {
		t.Fatalf("repair: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = aaGrade(t, env, "data", "verify"); r.code != 0 {
		t.Fatalf("verify after repair: exit %d\n%s", r.code, r.stdout)
	}

	// grade reads the ground truths of a Hub dataset from its index.
	subs := t.TempDir()
	testfs.Write(t, filepath.Join(subs, "Scenario-1", "1.json"), `["otel-demo/ConfigMap/flagd-config"]`)
	r = aaGrade(t, env, "grade", "--dataset", "hf:"+sampleRepo, subs)
	r.wantExit(t, 0)
	textcheck.Has(t, "grade hf's stdout", r.stdout, "over 1 task x 1 repeat")
	textcheck.Has(t, "grade hf's stderr", r.stderr, "cover 1 of the 3 tasks")
}

func TestDataCommandErrors(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.ServeSample(sampleRepo, fakehub.SampleDataset(1, 1024))
	env := hubEnv(h, t.TempDir())
	for name, c := range map[string]struct {
		args []string
		code int
		text string
	}{
		"local folder for pull": {[]string{"data", "pull", "--dataset", "testdata"}, 2, "work on Hub datasets"},
		"bad spec":              {[]string{"data", "pull", "--dataset", "hf:nope"}, 2, "expected hf:OWNER/NAME"},
		"unknown repo":          {[]string{"data", "pull", "--dataset", "hf:nobody/nothing"}, 2, "not found"},
		"unknown revision":      {[]string{"data", "pull", "--dataset", "hf:" + sampleRepo + "@v7"}, 2, "no such revision"},
		"unknown task":          {[]string{"data", "pull", "--tasks", "9"}, 2, "no such task: Scenario-9"},
		"extra argument":        {[]string{"data", "ls", "x"}, 2, "takes no arguments"},
		"never pulled offline":  {[]string{"data", "verify"}, 3, "never pulled"},
		"repair offline":        {[]string{"data", "verify", "--repair"}, 3, "aa-grade: offline (HF_HUB_OFFLINE is set): --repair needs the network\n"},
	} {
		t.Run(name, func(t *testing.T) {
			e := env
			if strings.HasSuffix(name, " offline") {
				e = append(hubEnv(h, t.TempDir()), "HF_HUB_OFFLINE=1")
			}
			r := aaGrade(t, e, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.text) {
				t.Fatalf("exit %d (want %d), stderr:\n%s", r.code, c.code, r.stderr)
			}
		})
	}
}

// TestDataPullSurvivesKill9 kills a pull with SIGKILL in the middle, pulls again, and checks
// that the second pull completes, verifies, does not fetch again a file that was complete,
// and resumes partial files from where they stopped.
func TestDataPullSurvivesKill9(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.SetRate(4 << 20) // slow enough to be caught mid-way
	files := fakehub.SampleDataset(4, 2<<20)
	h.ServeSample(sampleRepo, files)
	cacheDir := t.TempDir()
	env := hubEnv(h, cacheDir)
	c := hub.Cache{Dir: cacheDir}
	blobs := filepath.Join(c.RepoDir(sampleRepo), "blobs")

	cmd := exec.Command(binary, "data", "pull", "--parallel", "2")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until one large file is complete and another is less than half written (so it is
	// still partial when the kill lands).
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		complete, partial := blobState(t, blobs, files)
		early := false
		for p, n := range partial {
			early = early || n < int64(len(files[p].Content)/2)
		}
		if len(complete) > 0 && early {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	complete, partial := blobState(t, blobs, files)
	if len(complete) == 0 || len(partial) == 0 {
		t.Fatalf("the pull was not caught mid-way: complete %v, partial %v", complete, partial)
	}
	before := len(h.Requests())
	h.SetRate(0)
	r := aaGrade(t, env, "data", "pull")
	if r.code != 0 {
		t.Fatalf("second pull: exit %d\n%s", r.code, r.stderr)
	}
	// What the second pull asked for: no complete file at all, each partial file from the
	// first byte it lacked.
	asked := map[string][]string{}
	for _, req := range h.Requests()[before:] {
		for p := range files {
			if strings.HasSuffix(req.Path, "/"+p) {
				asked[p] = append(asked[p], req.Server+" range="+req.Range)
			}
		}
	}
	for p := range complete {
		if len(asked[p]) > 0 {
			t.Errorf("%s was complete before the kill but was requested again: %v", p, asked[p])
		}
	}
	for p, size := range partial {
		want := fmt.Sprintf("cdn range=bytes=%d-", size)
		if len(asked[p]) == 0 || asked[p][len(asked[p])-1] != want {
			t.Errorf("%s: %d bytes were on disk; the second pull asked %v, want %q", p, size, asked[p], want)
		}
	}
	if r = aaGrade(t, env, "data", "verify"); r.code != 0 {
		t.Fatalf("verify after resume: exit %d\n%s", r.code, r.stdout)
	}
}

// blobState lists which large files have a complete blob, and the size of partial ones.
func blobState(t *testing.T, blobs string, files map[string]fakehub.File) (map[string]bool, map[string]int64) {
	complete, partial := map[string]bool{}, map[string]int64{}
	for p, f := range files {
		if !f.LFS {
			continue
		}
		etag := fakehub.ETag(f)
		if _, err := os.Stat(filepath.Join(blobs, etag)); err == nil {
			complete[p] = true
		} else if info, err := os.Stat(filepath.Join(blobs, etag+".incomplete")); err == nil && info.Size() > 0 {
			partial[p] = info.Size()
		}
	}
	return complete, partial
}

// TestDataPullInterrupted: Ctrl-C stops a pull with exit 130 and says how to resume; the
// partial files stay for the next pull.
func TestDataPullInterrupted(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.SetRate(2 << 20)
	h.ServeSample(sampleRepo, fakehub.SampleDataset(2, 4<<20))
	cacheDir := t.TempDir()
	cmd := exec.Command(binary, "data", "pull")
	cmd.Env = append(os.Environ(), hubEnv(h, cacheDir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(hub.Cache{Dir: cacheDir}.RepoDir(sampleRepo), "blobs")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if matches, _ := filepath.Glob(filepath.Join(blobs, "*.incomplete")); len(matches) > 0 {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if cmd.ProcessState.ExitCode() != 130 || !strings.Contains(stderr.String(), "run the same command again to resume") {
		t.Fatalf("exit %d (%v), stderr:\n%s", cmd.ProcessState.ExitCode(), err, stderr.String())
	}
	if matches, _ := filepath.Glob(filepath.Join(blobs, "*.incomplete")); len(matches) == 0 {
		t.Fatal("the partial files were not kept")
	}
	h.SetRate(0)
	if r := aaGrade(t, hubEnv(h, cacheDir), "data", "pull"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
}

// TestDataVerifyChecksThePulledTasks: after a pull of one task, verify checks the index and
// that task, says the others were never pulled, and exits 0; --tasks checks the tasks named,
// pulled or not.
func TestDataVerifyChecksThePulledTasks(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	files := fakehub.SampleDataset(3, 1024)
	h.ServeSample(sampleRepo, files)
	env := hubEnv(h, t.TempDir())
	if r := aaGrade(t, env, "data", "pull", "--tasks", "1"); r.code != 0 {
		t.Fatalf("pull: exit %d\n%s", r.code, r.stderr)
	}
	pulled := 0
	for p := range files {
		if p == "sre/data.jsonl" || strings.HasPrefix(p, "sre/Scenario-1/") {
			pulled++
		}
	}
	r := aaGrade(t, env, "data", "verify")
	r.wantExit(t, 0)
	textcheck.Has(t, "verify's output", r.stdout, fmt.Sprintf("checked %d files", pulled), "2 tasks never pulled, not checked")
	if !textcheck.Lacks(t, "verify's output", r.stdout, "missing") || t.Failed() {
		t.FailNow()
	}
	r = aaGrade(t, env, "data", "verify", "--tasks", "2")
	r.wantExit(t, 1)
	textcheck.Has(t, "verify --tasks 2", r.stdout, "missing: sre/Scenario-2/")
	textcheck.Lacks(t, "verify --tasks 2", r.stdout, "Scenario-3")
}

// TestHubUnreachable: with no Hub to reach (nothing listens at HF_ENDPOINT), every command that
// needs it fails with one line naming HF_HUB_OFFLINE=1 and --dataset demo, exit 3; data ls
// lists what the cache holds instead, with a warning saying so.
func TestHubUnreachable(t *testing.T) {
	h := fakehub.New()
	h.ServeSample(sampleRepo, fakehub.SampleDataset(2, 1024))
	cache := t.TempDir()
	if r := aaGrade(t, hubEnv(h, cache), "data", "pull"); r.code != 0 {
		t.Fatalf("pull: exit %d\n%s", r.code, r.stderr)
	}
	h.Close()
	down := []string{"HF_ENDPOINT=" + h.URL, "HF_HUB_CACHE=" + cache}
	r := aaGrade(t, down, "data", "ls")
	r.wantExit(t, 0)
	textcheck.Has(t, "the offline ls's stdout", r.stdout, "Scenario-2")
	if !textcheck.Has(t, "the offline ls's stderr", r.stderr, "the local cache") || t.Failed() {
		t.FailNow()
	}

	for _, args := range [][]string{{"data", "pull"}, {"data", "verify", "--repair"}, {"data", "ls"}, {"grade", "testdata/grade/submissions"}} {
		r := aaGrade(t, nil, args...) // an empty cache, and nothing at HF_ENDPOINT
		last := lastLine(r.stderr)    // after the retries pull shows
		r.checkExit(t, 3)
		if !strings.HasPrefix(last, "aa-grade: ") {
			t.Errorf("%s: the last line %q does not start with aa-grade: ", strings.Join(args, " "), last)
		}
		textcheck.Has(t, strings.Join(args, " ")+": the last line", last, "HF_HUB_OFFLINE=1", "--dataset demo", "cannot be reached")
	}
}
