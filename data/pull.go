package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/workpool"
)

// ParquetRevision is the branch where the Hub keeps the parquet conversion of a dataset.
const ParquetRevision = "refs/convert/parquet"

// ErrOffline marks a pull that needs the network while HF_HUB_OFFLINE is set.
var ErrOffline = errors.New("offline")

// ErrNeverPulled marks, besides ErrOffline, a dataset the cache has never held: only a pull
// with the network can get it.
var ErrNeverPulled = errors.New("was never pulled")

// PullOptions narrows and tunes a pull.
type PullOptions struct {
	Tasks     []string    // only sre/data.jsonl and these scenario folders
	IndexOnly bool        // only the task index
	Parallel  int         // files downloaded at once (default 8)
	Progress  func(Event) // told about the pull as it goes; nil: nothing is told
}

// PullResult says what a pull left in the cache.
type PullResult struct {
	Spec       HubSpec
	Commit     string
	Dir        string   // the snapshot folder, in the Hub layout
	Parquet    []string // the parquet index files, when the dataset has no data.jsonl
	Files      int
	Bytes      int64
	Cached     int   // files that were already in the cache
	Downloaded int64 // bytes this pull fetched
}

// Pull brings a Hub dataset into the shared cache (or, offline, checks that the cache holds
// it) and returns where it is. Files already cached are not fetched again; partial files of
// an interrupted pull are resumed.
func Pull(ctx context.Context, cfg hub.Config, spec HubSpec, opts PullOptions) (*PullResult, error) {
	cache := hub.Cache{Dir: cfg.CacheDir}
	if cfg.Offline {
		return pullOffline(cache, spec, opts)
	}
	client := hub.NewClient(cfg)
	client.OnRetry = opts.onRetry()
	commit, err := client.Revision(ctx, spec.Repo, spec.Revision)
	if err != nil {
		return nil, err
	}
	if err := cache.WriteRef(spec.Repo, spec.Revision, commit); err != nil {
		return nil, err
	}
	listing, err := client.Tree(ctx, spec.Repo, commit, "")
	if err != nil {
		return nil, err
	}
	entries, err := selectEntries(listing, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	res := &PullResult{Spec: spec, Commit: commit, Dir: cache.SnapshotDir(spec.Repo, commit)}
	if !hasPath(entries, IndexPath) {
		parquetCommit, parquetEntries, err := parquetIndex(ctx, client, cache, spec)
		if err != nil {
			return nil, fmt.Errorf("%s has no %s and no parquet index: %w", spec, IndexPath, err)
		}
		if err := fetchAll(ctx, client, cache, spec.Repo, parquetCommit, parquetEntries, opts, &PullResult{}); err != nil {
			return nil, err
		}
		for _, e := range parquetEntries {
			res.Parquet = append(res.Parquet,
				filepath.Join(cache.SnapshotDir(spec.Repo, parquetCommit), filepath.FromSlash(e.Path)))
		}
	}
	if err := fetchAll(ctx, client, cache, spec.Repo, commit, entries, opts, res); err != nil {
		return res, err
	}
	return res, nil
}

// selectEntries keeps the files a pull needs and refuses paths that could escape the cache.
// An index-only pull fetches no task folder, so it does not look for the tasks' folders
// either: the index says which tasks the dataset has (Open checks them there).
func selectEntries(listing []hub.Entry, opts PullOptions) ([]hub.Entry, error) {
	wanted := map[string]bool{}
	if !opts.IndexOnly {
		for _, t := range opts.Tasks {
			wanted[TaskFolder(t)] = true
		}
	}
	found, have := map[string]bool{}, map[string]bool{}
	var out []hub.Entry
	for _, e := range listing {
		if !safePath(e.Path) {
			return nil, fmt.Errorf("the listing names an unsafe path %q", e.Path)
		}
		if rest, ok := strings.CutPrefix(e.Path, taskPrefix); ok {
			if task, _, inFolder := strings.Cut(rest, "/"); inFolder { // the index is no task
				have[task] = true
			}
		}
		switch {
		case e.Path == IndexPath:
		case opts.IndexOnly:
			continue
		case len(wanted) > 0:
			task, _, _ := strings.Cut(strings.TrimPrefix(e.Path, taskPrefix), "/")
			if !strings.HasPrefix(e.Path, taskPrefix) || !wanted[task] {
				continue
			}
			found[task] = true
		}
		out = append(out, e)
	}
	var missing []string
	for t := range wanted {
		if !found[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%w: %s (its tasks: %s)", ErrUnknownTask, strings.Join(missing, ", "),
			DescribeIDs(slices.Collect(maps.Keys(have))))
	}
	return out, nil
}

// safePath accepts only clean relative paths.
func safePath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.Contains(p, `\`) && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../") && !strings.Contains(p, "/../")
}

func hasPath(entries []hub.Entry, p string) bool {
	for _, e := range entries {
		if e.Path == p {
			return true
		}
	}
	return false
}

// parquetIndex lists the parquet conversion of the dataset's rows.
func parquetIndex(ctx context.Context, client *hub.Client, cache hub.Cache, spec HubSpec) (string, []hub.Entry, error) {
	commit, err := client.Revision(ctx, spec.Repo, ParquetRevision)
	if err != nil {
		return "", nil, err
	}
	if err := cache.WriteRef(spec.Repo, ParquetRevision, commit); err != nil {
		return "", nil, err
	}
	listing, err := client.Tree(ctx, spec.Repo, commit, "")
	if err != nil {
		return "", nil, err
	}
	var out []hub.Entry
	for _, e := range listing {
		if strings.HasSuffix(e.Path, ".parquet") && safePath(e.Path) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return "", nil, fmt.Errorf("%s holds no .parquet file", ParquetRevision)
	}
	return commit, out, nil
}

// fetchAll downloads entries with bounded parallelism, largest first, and reports every file
// that failed (the others stay in the cache, so a second pull only fetches what is missing).
func fetchAll(
	ctx context.Context,
	client *hub.Client,
	cache hub.Cache,
	repo, commit string,
	entries []hub.Entry,
	opts PullOptions,
	res *PullResult,
) error {
	entries = append([]hub.Entry(nil), entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].ContentSize() > entries[j].ContentSize() })
	var cachedBytes int64
	var todo []hub.Entry
	for _, e := range entries {
		res.Files++
		res.Bytes += e.ContentSize()
		if cache.Linked(repo, commit, e.Path, e.ContentSize()) {
			res.Cached++
			cachedBytes += e.ContentSize()
			continue
		}
		todo = append(todo, e)
	}
	opts.tell(PullPlanned{Files: res.Files, Bytes: res.Bytes, CachedFiles: res.Cached, CachedBytes: cachedBytes})
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	var mu sync.Mutex
	var failures []string
	var firstErr error
	workpool.Run(ctx, parallel, todo, func(e hub.Entry) {
		n, err := client.Fetch(ctx, cache, repo, commit, e, opts.onBytes())
		mu.Lock()
		res.Downloaded += n
		if err != nil {
			failures = append(failures, err.Error())
			if firstErr == nil {
				firstErr = err
			}
		}
		mu.Unlock()
		opts.tell(PullFileDone{Path: e.Path, Downloaded: n, Err: err})
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		return &FetchError{Failed: failures, Of: len(todo), first: firstErr}
	}
	return nil
}

// FetchError lists the files a pull could not fetch; errors.Is sees the first cause.
type FetchError struct {
	Failed []string // one message per file
	Of     int
	first  error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("%d of %d files failed (run the pull again to retry them): %s", len(e.Failed), e.Of,
		strings.Join(e.Failed, "; "))
}

func (e *FetchError) Unwrap() error { return e.first }

// pullOffline serves a pull from the cache alone, naming what is missing.
func pullOffline(cache hub.Cache, spec HubSpec, opts PullOptions) (*PullResult, error) {
	commit := spec.Revision
	if !hub.IsCommit(commit) {
		var err error
		if commit, err = cache.ReadRef(spec.Repo, spec.Revision); err != nil {
			return nil, fmt.Errorf("%w (HF_HUB_OFFLINE is set): %s %w into %s", ErrOffline, spec, ErrNeverPulled, cache.Dir)
		}
	}
	present, missing, err := cache.SnapshotFiles(spec.Repo, commit)
	if err != nil {
		// %v: the cause (a snapshot folder that is not there) must not read as a dataset that
		// does not exist; offline, the cache is what is missing.
		return nil, fmt.Errorf("%w (HF_HUB_OFFLINE is set): %s: %v", ErrOffline, spec, err)
	}
	res := &PullResult{Spec: spec, Commit: commit, Dir: cache.SnapshotDir(spec.Repo, commit), Cached: len(present),
		Files: len(present)}
	have := map[string]bool{}
	for _, p := range present {
		have[strings.SplitN(p, "/", 3)[min(1, strings.Count(p, "/"))]] = true
		if info, err := os.Stat(filepath.Join(res.Dir, filepath.FromSlash(p))); err == nil {
			res.Bytes += info.Size()
		}
	}
	need := []string{}
	if !have[IndexFile] {
		if files, err := offlineParquet(cache, spec); err == nil {
			res.Parquet = files
		} else {
			need = append(need, IndexPath)
		}
	}
	if !opts.IndexOnly {
		for _, t := range opts.Tasks {
			if !have[TaskFolder(t)] {
				need = append(need, taskPrefix+TaskFolder(t)+"/")
			}
		}
	}
	need = append(need, missing...)
	if len(need) > 0 {
		return res, fmt.Errorf("%w (HF_HUB_OFFLINE is set): the cached %s lacks %s", ErrOffline, spec,
			strings.Join(need, ", "))
	}
	return res, nil
}

// offlineParquet finds a cached parquet index.
func offlineParquet(cache hub.Cache, spec HubSpec) ([]string, error) {
	commit, err := cache.ReadRef(spec.Repo, ParquetRevision)
	if err != nil {
		return nil, err
	}
	root := cache.SnapshotDir(spec.Repo, commit)
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no parquet file under %s", root)
	}
	return files, err
}
