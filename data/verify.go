package data

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/workpool"
)

// BadFile is a cached file that is missing or whose content does not hash to its name.
type BadFile struct {
	Path    string `json:"path"`
	Problem string `json:"problem"` // missing or corrupt
	Detail  string `json:"detail,omitempty"`
}

// VerifyResult reports a verification.
type VerifyResult struct {
	Spec     HubSpec
	Commit   string
	Checked  int
	Bytes    int64
	Bad      []BadFile
	Repaired int
	// NotPulled are the tasks of the listing not checked: no --tasks asked for them and none
	// of their files was ever pulled (online only).
	NotPulled []string
}

// ErrRepairOffline marks, besides ErrOffline, a repair asked for while HF_HUB_OFFLINE is set:
// a repair fetches files again.
var ErrRepairOffline = errors.New("a repair needs the network")

// Verify re-hashes every cached file of a Hub dataset at its revision against the hash that
// names its blob. Online, the Hub's listing also says which files are missing: of the tasks
// opts.Tasks names, or else of the index and the tasks pulled (a task none of whose files is
// in the snapshot was never asked for, and is listed in NotPulled); offline, only the files
// already linked are checked. With repair, missing and corrupt files are fetched
// again (online only); one whose file or blob cannot be removed is left as it is, named in
// the error, and the others are still repaired.
func Verify(ctx context.Context, cfg hub.Config, spec HubSpec, repair bool, opts PullOptions) (*VerifyResult, error) {
	cache := hub.Cache{Dir: cfg.CacheDir}
	res := &VerifyResult{Spec: spec}
	var entries []hub.Entry
	var client *hub.Client
	if cfg.Offline {
		if repair {
			return nil, fmt.Errorf("%w (HF_HUB_OFFLINE is set): %w", ErrOffline, ErrRepairOffline)
		}
		pulled, err := pullOffline(cache, spec, PullOptions{IndexOnly: true})
		if pulled == nil {
			return nil, err
		}
		res.Commit = pulled.Commit
		if entries, err = cachedEntries(cache, spec.Repo, res.Commit); err != nil {
			return nil, err
		}
	} else {
		client = hub.NewClient(cfg)
		client.OnRetry = opts.onRetry()
		commit, err := client.Revision(ctx, spec.Repo, spec.Revision)
		if err != nil {
			return nil, err
		}
		res.Commit = commit
		listing, err := client.Tree(ctx, spec.Repo, commit, "")
		if err != nil {
			return nil, err
		}
		if entries, err = selectEntries(listing, opts); err != nil {
			return nil, err
		}
		if len(opts.Tasks) == 0 {
			entries, res.NotPulled = pulledEntries(cache.SnapshotDir(spec.Repo, commit), entries)
		}
	}
	res.Bad = checkEntries(ctx, cache, spec.Repo, res.Commit, entries, &res.Checked, &res.Bytes)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !repair || len(res.Bad) == 0 {
		return res, nil
	}
	byPath := map[string]hub.Entry{}
	for _, e := range entries {
		byPath[e.Path] = e
	}
	var todo []hub.Entry
	var unrepaired []error
	for _, b := range res.Bad {
		e := byPath[b.Path]
		remove := []string{filepath.Join(cache.SnapshotDir(spec.Repo, res.Commit), filepath.FromSlash(e.Path))}
		if b.Problem == "corrupt" {
			remove = append(remove, cache.BlobPath(spec.Repo, e.ETag()))
		}
		var err error
		for _, p := range remove {
			if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
		if err != nil {
			// Fetched again, it would be linked to what stayed. The others are still fetched:
			// their files are removed already, and stopping here would leave them missing.
			unrepaired = append(unrepaired, fmt.Errorf("repair %s: %w", e.Path, err))
			continue
		}
		todo = append(todo, e)
	}
	if err := fetchAll(ctx, client, cache, spec.Repo, res.Commit, todo, opts, &PullResult{}); err != nil {
		return res, errors.Join(append(unrepaired, err)...)
	}
	res.Repaired = len(todo)
	return res, errors.Join(unrepaired...)
}

// pulledEntries narrows a listing to what was pulled when some tasks have no folder in the
// snapshot root (a pull with --tasks): the index, the tasks that have one, and the other files
// that are there; those tasks are listed. When every task has a folder, the listing is kept
// whole, so a file missing from a full pull is still found.
func pulledEntries(root string, entries []hub.Entry) ([]hub.Entry, []string) {
	exists := func(rel string) bool {
		_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	pulled := map[string]bool{}
	for _, e := range entries {
		if task, inTask := folderTask(e.Path); inTask {
			if _, seen := pulled[task]; !seen {
				pulled[task] = exists(taskPrefix + task)
			}
		}
	}
	var notPulled []string
	for task, ok := range pulled {
		if !ok {
			notPulled = append(notPulled, task)
		}
	}
	if len(notPulled) == 0 {
		return entries, nil
	}
	sort.Strings(notPulled)
	var kept []hub.Entry
	for _, e := range entries {
		task, inTask := folderTask(e.Path)
		switch {
		case inTask:
			if pulled[task] {
				kept = append(kept, e)
			}
		case e.Path == IndexPath || exists(e.Path):
			kept = append(kept, e)
		}
	}
	return kept, notPulled
}

// folderTask is the task whose folder holds a listing path (sre/<task>/...), if any.
func folderTask(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, taskPrefix)
	if !ok {
		return "", false
	}
	task, _, inTask := strings.Cut(rest, "/")
	return task, inTask
}

// cachedEntries describes the linked files of a cached snapshot from their blob names.
func cachedEntries(cache hub.Cache, repo, commit string) ([]hub.Entry, error) {
	root := cache.SnapshotDir(repo, commit)
	var entries []hub.Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("%s is not a link into the cache: %w", p, err)
		}
		entries = append(entries, blobEntry(filepath.ToSlash(rel), filepath.Base(target), p))
		return nil
	})
	return entries, err
}

// blobEntry rebuilds a listing entry from a blob name: 64 hex digits are a sha256 (LFS/Xet),
// 40 a git blob sha1. The size is read from the file (-1 when it is missing).
func blobEntry(path, etag, file string) hub.Entry {
	size := int64(-1)
	if info, err := os.Stat(file); err == nil {
		size = info.Size()
	}
	if len(etag) == 64 {
		return hub.Entry{Type: "file", Path: path, Size: size, LFS: &hub.LFS{OID: etag, Size: size}}
	}
	return hub.Entry{Type: "file", Path: path, Size: size, OID: etag}
}

// checkEntries re-hashes the cached content of entries in parallel.
func checkEntries(
	ctx context.Context,
	cache hub.Cache,
	repo, commit string,
	entries []hub.Entry,
	checked *int,
	total *int64,
) []BadFile {
	var mu sync.Mutex
	var bad []BadFile
	workpool.Run(ctx, runtime.GOMAXPROCS(0), entries, func(e hub.Entry) {
		n, problem, detail := checkEntry(cache, repo, commit, e)
		mu.Lock()
		defer mu.Unlock()
		*checked++
		*total += n
		if problem != "" {
			bad = append(bad, BadFile{Path: e.Path, Problem: problem, Detail: detail})
		}
	})
	sort.Slice(bad, func(i, j int) bool { return bad[i].Path < bad[j].Path })
	return bad
}

func checkEntry(cache hub.Cache, repo, commit string, e hub.Entry) (int64, string, string) {
	link := filepath.Join(cache.SnapshotDir(repo, commit), filepath.FromSlash(e.Path))
	f, err := os.Open(link)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "missing", ""
	}
	if err != nil {
		return 0, "missing", err.Error()
	}
	defer func() { _ = f.Close() }() // read only
	if target, err := os.Readlink(link); err == nil && filepath.Base(target) != e.ETag() {
		return 0, "corrupt", fmt.Sprintf("linked to blob %s, expected %s", filepath.Base(target), e.ETag())
	}
	info, err := f.Stat()
	if err != nil {
		return 0, "missing", err.Error()
	}
	if info.Size() != e.ContentSize() {
		return info.Size(), "corrupt", fmt.Sprintf("%d bytes, expected %d", info.Size(), e.ContentSize())
	}
	got, err := hub.HashContent(f, e)
	if err != nil {
		return info.Size(), "corrupt", err.Error()
	}
	if got != e.ETag() {
		return info.Size(), "corrupt", fmt.Sprintf("content hashes to %s", strings.TrimSpace(got))
	}
	return info.Size(), "", ""
}
