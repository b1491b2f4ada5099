package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
)

const testRepo = "ArtificialAnalysis/ITBench-AA"

// testFiles is a small dataset in the Hub layout: an index, two scenarios with a large LFS
// TSV each and small files.
func testFiles(t *testing.T) map[string]fakehub.File {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	big := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	var index bytes.Buffer
	files := map[string]fakehub.File{}
	for _, id := range []string{"Scenario-1", "Scenario-2"} {
		gt := fmt.Sprintf("groups:\n  - {id: %s-cm, kind: ConfigMap, namespace: otel-demo, name: flagd-config, root_cause: true}\n", strings.ToLower(id))
		index.WriteString(indexLine(t, id, gt))
		files["sre/"+id+"/ground_truth.yaml"] = fakehub.File{Content: []byte(gt)}
		files["sre/"+id+"/k8s_events_raw.tsv"] = fakehub.File{Content: big(3<<20 + 17), LFS: true}
		files["sre/"+id+"/alerts/alerts_at_2025-12-15T17-30-49.329092.json"] = fakehub.File{Content: []byte(`[]`)}
	}
	files[IndexPath] = fakehub.File{Content: index.Bytes()}
	files["README.md"] = fakehub.File{Content: []byte("# ITBench-AA\n")}
	return files
}

// newHub serves testFiles as main and returns the hub and a configuration pointing at it
// with a fresh cache and fast retries.
func newHub(t *testing.T) (*fakehub.Hub, map[string]fakehub.File, hub.Config) {
	t.Helper()
	h := fakehub.New()
	t.Cleanup(h.Close)
	h.PageSize = 3
	h.Token = "hf_testtoken"
	files := testFiles(t)
	commit := fakehub.Commit(files)
	h.AddRepo(&fakehub.Repo{Name: testRepo, Refs: map[string]string{"main": commit}, Commits: map[string]map[string]fakehub.File{commit: files}})
	cfg := hub.Config{Endpoint: h.URL, CacheDir: t.TempDir(), Token: "hf_testtoken", Timeout: 5 * time.Second,
		Retry: hub.Retry{Attempts: 5, Base: time.Millisecond, Max: 10 * time.Millisecond, MaxRetryAfter: 2 * time.Second}}
	return h, files, cfg
}

func pull(t *testing.T, cfg hub.Config, opts PullOptions) (*PullResult, error) {
	t.Helper()
	spec, err := ParseHubSpec("hf:" + testRepo)
	if err != nil {
		t.Fatal(err)
	}
	return Pull(context.Background(), cfg, spec, opts)
}

// checkSnapshot asserts that every file under snapshots/ is a relative link to a blob whose
// content hashes to its name (nothing unverified is ever visible there), and that the wanted
// files are present with the right content.
func checkSnapshot(t *testing.T, cfg hub.Config, files map[string]fakehub.File, want []string) {
	t.Helper()
	cache := hub.Cache{Dir: cfg.CacheDir}
	root := filepath.Join(cache.RepoDir(testRepo), "snapshots")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil || filepath.IsAbs(target) {
			t.Errorf("%s is not a relative symlink (%q, %v)", p, target, err)
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		etag := filepath.Base(target)
		if got := fakehub.ETag(fakehub.File{Content: content, LFS: len(etag) == 64}); got != etag {
			t.Errorf("%s: content hashes to %s, its blob is named %s", p, got, etag)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	commit := fakehub.Commit(files)
	for _, p := range want {
		got, err := os.ReadFile(filepath.Join(cache.SnapshotDir(testRepo, commit), p))
		if err != nil || !bytes.Equal(got, files[p].Content) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", p, len(got), err, len(files[p].Content))
		}
	}
}

func allPaths(files map[string]fakehub.File) []string {
	var out []string
	for p := range files {
		out = append(out, p)
	}
	return out
}

func TestPullEverything(t *testing.T) {
	h, files, cfg := newHub(t)
	res, err := pull(t, cfg, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	commit := fakehub.Commit(files)
	if res.Commit != commit {
		t.Errorf("commit %s, want %s", res.Commit, commit)
	}
	if res.Files != len(files) || res.Cached != 0 {
		t.Errorf("%d files, %d of them cached; want %d, none", res.Files, res.Cached, len(files))
	}
	checkSnapshot(t, cfg, files, allPaths(files))
	cache := hub.Cache{Dir: cfg.CacheDir}
	ref, err := os.ReadFile(filepath.Join(cache.RepoDir(testRepo), "refs", "main"))
	if err != nil || string(ref) != commit {
		t.Fatalf("refs/main = %q, %v; want the commit without newline", ref, err)
	}
	for _, r := range h.Requests() {
		if r.Server == "cdn" && r.Authorization != "" {
			t.Errorf("the token followed the redirect to the CDN: %+v", r)
		}
		if r.Server == "hub" && r.Authorization != "Bearer hf_testtoken" {
			t.Errorf("the hub did not get the token: %+v", r)
		}
	}
	pages := 0
	for _, r := range h.Requests() {
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if pages < 4 {
		t.Errorf("the listing took %d pages; pagination was not followed", pages)
	}

	// A second pull finds everything cached and downloads nothing.
	before := h.Served("sre/Scenario-1/k8s_events_raw.tsv")
	res, err = pull(t, cfg, PullOptions{})
	if err != nil {
		t.Fatalf("second pull: %v", err)
	}
	if res.Cached != len(files) {
		t.Errorf("second pull: %d files cached, want all %d", res.Cached, len(files))
	}
	if served := h.Served("sre/Scenario-1/k8s_events_raw.tsv") - before; res.Downloaded != 0 || served != 0 {
		t.Errorf("second pull: downloaded %d bytes (the hub served %d more of a cached file), want none", res.Downloaded, served)
	}

	ds, err := Open(context.Background(), "hf:"+testRepo, OpenOptions{Hub: cfg})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := ids(ds.Tasks); got != "Scenario-1,Scenario-2" {
		t.Fatalf("Open: tasks %s, want Scenario-1,Scenario-2", got)
	}
	if ds.Tasks[0].Dir == "" {
		t.Error("Open: the first task has no folder")
	}
	if len(ds.Warnings) != 0 {
		t.Errorf("Open: warnings %q", ds.Warnings)
	}
}

func TestPullOnlyTasksAndIndex(t *testing.T) {
	h, files, cfg := newHub(t)
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"2"}}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg, files, []string{IndexPath, "sre/Scenario-2/k8s_events_raw.tsv", "sre/Scenario-2/ground_truth.yaml"})
	if h.Served("sre/Scenario-1/k8s_events_raw.tsv") != 0 || h.Served("README.md") != 0 {
		t.Fatal("files of other tasks were downloaded")
	}
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"Scenario-77"}}); !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), "no such task: Scenario-77 (its tasks: ") {
		t.Fatalf("unknown task: %v", err)
	}
	// Grading needs only the index.
	other := cfg
	other.CacheDir = t.TempDir()
	ds, err := Open(context.Background(), "hf:"+testRepo, OpenOptions{Hub: other, IndexOnly: true})
	if err != nil {
		t.Fatalf("index only: %v", err)
	}
	if len(ds.Tasks) != 2 {
		t.Fatalf("index only: %d tasks, want 2", len(ds.Tasks))
	}
	if len(ds.Warnings) != 0 {
		t.Errorf("index only: warnings %q", ds.Warnings)
	}
	if got := string(ds.Tasks[1].GroundTruth); !strings.Contains(got, "scenario-2-cm") {
		t.Fatalf("ground truth from the index row: %q", got)
	}
}

func TestPullSurvivesTransientFailures(t *testing.T) {
	h, files, cfg := newHub(t)
	big := "sre/Scenario-1/k8s_events_raw.tsv"
	small := "sre/Scenario-2/ground_truth.yaml"
	h.Fail(big, fakehub.Fault{Status: 429, RetryAfter: "1"}, fakehub.Fault{Status: 503}, fakehub.Fault{CutAfter: 1 << 20})
	h.Fail(small, fakehub.Fault{Status: 500}, fakehub.Fault{Status: 502})
	h.Fail(IndexPath, fakehub.Fault{CutAfter: 10})
	var mu sync.Mutex
	var waits []time.Duration
	start := time.Now()
	_, err := pull(t, cfg, PullOptions{Progress: func(e Event) {
		if r, ok := e.(PullRetry); ok {
			mu.Lock()
			waits = append(waits, r.Wait)
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg, files, allPaths(files))
	if time.Since(start) < time.Second || !containsWait(waits, time.Second) {
		t.Errorf("Retry-After: 1 was not honoured: waits %v", waits)
	}
	// The cut body was resumed with Range, so no byte was downloaded twice.
	if got := h.Served(big); got != int64(len(files[big].Content)) {
		t.Errorf("%s: served %d bytes for %d", big, got, len(files[big].Content))
	}
	resumed := false
	for _, r := range h.Requests() {
		resumed = resumed || r.Range == fmt.Sprintf("bytes=%d-", 1<<20)
	}
	if !resumed {
		t.Error("no request resumed at the cut")
	}
}

func containsWait(waits []time.Duration, d time.Duration) bool {
	for _, w := range waits {
		if w == d {
			return true
		}
	}
	return false
}

func TestPullStalledBodyIsResumed(t *testing.T) {
	h, files, cfg := newHub(t)
	cfg.Timeout = 300 * time.Millisecond
	big := "sre/Scenario-2/k8s_events_raw.tsv"
	h.Fail(big, fakehub.Fault{CutAfter: 4096, Stall: 5 * time.Second})
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"Scenario-2"}}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg, files, []string{big})
}

func TestPullWrongContent(t *testing.T) {
	h, files, cfg := newHub(t)
	big := "sre/Scenario-1/k8s_events_raw.tsv"
	// Once wrong, then right: retried, verified, linked.
	h.Fail(big, fakehub.Fault{Corrupt: true})
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg, files, []string{big})

	// Always wrong: reported, and nothing unverified appears in blobs/ or snapshots/.
	h2, files2, cfg2 := newHub(t)
	small := "sre/Scenario-1/ground_truth.yaml"
	for range 3 {
		h2.Fail(small, fakehub.Fault{Corrupt: true})
	}
	_, err := pull(t, cfg2, PullOptions{Tasks: []string{"1"}})
	if !errors.Is(err, hub.ErrCorrupt) || !strings.Contains(err.Error(), small) {
		t.Fatalf("err = %v, want ErrCorrupt naming %s", err, small)
	}
	checkSnapshot(t, cfg2, files2, []string{IndexPath, big})
	cache := hub.Cache{Dir: cfg2.CacheDir}
	if _, err := os.Lstat(filepath.Join(cache.SnapshotDir(testRepo, fakehub.Commit(files2)), small)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is in the snapshot: %v", small, err)
	}
	if _, err := os.Stat(cache.BlobPath(testRepo, fakehub.ETag(files2[small]))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an unverified blob was kept: %v", err)
	}
	// The next pull, with the Hub healthy again, completes.
	if _, err := pull(t, cfg2, PullOptions{Tasks: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg2, files2, []string{small})
}

func TestPullHubErrors(t *testing.T) {
	h, _, cfg := newHub(t)
	h.AddRepo(&fakehub.Repo{Name: "ibm/gated", Gated: true, Refs: map[string]string{"main": strings.Repeat("a", 40)},
		Commits: map[string]map[string]fakehub.File{strings.Repeat("a", 40): {IndexPath: {Content: []byte("{}\n")}}}})
	noToken := cfg
	noToken.Token = ""
	for name, c := range map[string]struct {
		spec string
		cfg  hub.Config
		want error
		text string
	}{
		"gated":            {"hf:ibm/gated", noToken, hub.ErrGated, "accept its terms"},
		"missing repo":     {"hf:nobody/nothing", cfg, hub.ErrRepoNotFound, "not found"},
		"missing revision": {"hf:" + testRepo + "@v9", cfg, hub.ErrRevisionNotFound, "no such revision"},
	} {
		t.Run(name, func(t *testing.T) {
			spec, err := ParseHubSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Pull(context.Background(), c.cfg, spec, PullOptions{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err = %v, want %v saying %q", err, c.want, c.text)
			}
		})
	}
	// With the token, the gated repository opens.
	spec, _ := ParseHubSpec("hf:ibm/gated")
	if _, err := Pull(context.Background(), cfg, spec, PullOptions{IndexOnly: true}); err != nil {
		t.Fatalf("gated with token: %v", err)
	}
}

func TestPullOffline(t *testing.T) {
	_, files, cfg := newHub(t)
	offline := cfg
	offline.Offline = true
	offline.Endpoint = "http://127.0.0.1:9" // nothing listens: any request would fail
	if _, err := pull(t, offline, PullOptions{}); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "never pulled") {
		t.Fatalf("empty cache offline: %v", err)
	}
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	res, err := pull(t, offline, PullOptions{Tasks: []string{"1"}})
	if err != nil || res.Commit != fakehub.Commit(files) {
		t.Fatalf("offline after pull: %+v %v", res, err)
	}
	if _, err := pull(t, offline, PullOptions{Tasks: []string{"2"}}); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "lacks sre/Scenario-2/") {
		t.Fatalf("offline, task not cached: %v", err)
	}
	ds, err := Open(context.Background(), "hf:"+testRepo, OpenOptions{Hub: offline, Tasks: []string{"1"}})
	if err != nil {
		t.Fatalf("Open offline: %v", err)
	}
	if got := ids(ds.Tasks); got != "Scenario-1" {
		t.Fatalf("Open offline: tasks %s, want Scenario-1", got)
	}
	if ds.Tasks[0].Dir == "" {
		t.Error("Open offline: the task has no folder")
	}
}

func TestPullParquetIndex(t *testing.T) {
	h, files, cfg := newHub(t)
	rows := []parquetRow{
		{IDAA: "it-bench-sre-public-scenario-1", ScenarioID: "Scenario-1", Category: "sre", SourceSplit: "public", GroundTruthYAML: string(files["sre/Scenario-1/ground_truth.yaml"].Content)},
		{IDAA: "it-bench-sre-private-scenario-9", ScenarioID: "Scenario-9", Category: "sre", SourceSplit: "private", GroundTruthYAML: "groups: []"},
	}
	var buf bytes.Buffer
	if err := writeParquet(&buf, rows); err != nil {
		t.Fatal(err)
	}
	noIndex := map[string]fakehub.File{}
	for p, f := range files {
		if p != IndexPath {
			noIndex[p] = f
		}
	}
	parquetFiles := map[string]fakehub.File{"sre/train/0000.parquet": {Content: buf.Bytes(), LFS: true}}
	main, conv := fakehub.Commit(noIndex), fakehub.Commit(parquetFiles)
	h.AddRepo(&fakehub.Repo{Name: "ibm/noindex", Refs: map[string]string{"main": main, ParquetRevision: conv},
		Commits: map[string]map[string]fakehub.File{main: noIndex, conv: parquetFiles}})
	ds, err := Open(context.Background(), "hf:ibm/noindex", OpenOptions{Hub: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ds.Tasks); got != "Scenario-1,Scenario-9" {
		t.Fatalf("tasks from parquet %s, want Scenario-1,Scenario-9", got)
	}
	if split := ds.Tasks[1].Row.SourceSplit; split != "private" {
		t.Errorf("Scenario-9's split %q, want private", split)
	}
	if ds.Tasks[0].Dir == "" {
		t.Error("Scenario-1 has no folder")
	}
	if !strings.Contains(strings.Join(ds.Warnings, "\n"), "Scenario-9: listed in data.jsonl but has no folder") {
		t.Errorf("warnings: %v", ds.Warnings)
	}
	ref, err := os.ReadFile(filepath.Join(hub.Cache{Dir: cfg.CacheDir}.RepoDir("ibm/noindex"), "refs", "refs", "convert", "parquet"))
	if err != nil || string(ref) != conv {
		t.Fatalf("parquet ref = %q, %v", ref, err)
	}
}

// TestPullStaleVersion: when the Hub answers a file with another commit than the listing's,
// nothing is read into the cache; a later answer that agrees is used.
func TestPullStaleVersion(t *testing.T) {
	h, files, cfg := newHub(t)
	big, small := "sre/Scenario-1/k8s_events_raw.tsv", "sre/Scenario-1/ground_truth.yaml"
	h.Fail(big, fakehub.Fault{Stale: true})
	h.Fail(small, fakehub.Fault{Stale: true})
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cfg, files, []string{big, small})
	for range 3 {
		h.Fail(small, fakehub.Fault{Stale: true})
	}
	cfg.CacheDir = t.TempDir()
	if _, err := pull(t, cfg, PullOptions{Tasks: []string{"1"}}); !errors.Is(err, hub.ErrCorrupt) || !strings.Contains(err.Error(), "serves commit 0000") {
		t.Fatalf("err = %v", err)
	}
}
