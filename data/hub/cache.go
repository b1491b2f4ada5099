package hub

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aa-grade/aa-grade/internal/atomicfile"
)

// Cache is huggingface_hub's cache folder (HF_HUB_CACHE), laid out exactly as the Python and
// JavaScript tools lay it out, so each uses what the others downloaded:
//
//	datasets--OWNER--NAME/refs/REV              the commit sha of a branch or tag, no newline
//	datasets--OWNER--NAME/blobs/ETAG            content, named by its hash
//	datasets--OWNER--NAME/blobs/ETAG.incomplete a download in progress (resumed from)
//	datasets--OWNER--NAME/snapshots/COMMIT/PATH relative symlinks to ../../blobs/ETAG
//	.locks/datasets--OWNER--NAME/ETAG.lock      held while a blob is downloaded
type Cache struct {
	Dir string
}

// RepoDir is the folder of one dataset.
func (c Cache) RepoDir(repo string) string {
	return filepath.Join(c.Dir, "datasets--"+strings.ReplaceAll(repo, "/", "--"))
}

// SnapshotDir is the tree of a dataset at a commit.
func (c Cache) SnapshotDir(repo, commit string) string {
	return filepath.Join(c.RepoDir(repo), "snapshots", commit)
}

// BlobPath is where the content named etag lives.
func (c Cache) BlobPath(repo, etag string) string {
	return filepath.Join(c.RepoDir(repo), "blobs", etag)
}

// IncompletePath is where a blob is downloaded before it is verified.
func (c Cache) IncompletePath(repo, etag string) string {
	return c.BlobPath(repo, etag) + ".incomplete"
}

// LockPath is the lock file guarding one blob's download (the one huggingface_hub uses).
func (c Cache) LockPath(repo, etag string) string {
	return filepath.Join(c.Dir, ".locks", "datasets--"+strings.ReplaceAll(repo, "/", "--"), etag+".lock")
}

// ReadRef returns the commit a branch or tag pointed to when last resolved online.
func (c Cache) ReadRef(repo, rev string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(rev)))
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(b))
	if !IsCommit(sha) {
		return "", fmt.Errorf("cache ref %s of %s holds %q, not a commit sha", rev, repo, sha)
	}
	return sha, nil
}

// WriteRef records the commit of a branch or tag, atomically.
func (c Cache) WriteRef(repo, rev, commit string) error {
	if rev == commit {
		// No ref to record, but the folder must exist: @huggingface/hub's scanCacheDir drops
		// a repository without refs/.
		return os.MkdirAll(filepath.Join(c.RepoDir(repo), "refs"), 0o755)
	}
	path := filepath.Join(c.RepoDir(repo), "refs", filepath.FromSlash(rev))
	if err := atomicfile.WriteFile(path, []byte(commit)); err != nil {
		return fmt.Errorf("write cache ref %s: %w", rev, err)
	}
	return nil
}

// Link points snapshots/COMMIT/PATH at the blob, with a relative symlink replaced atomically.
// Where symlinks cannot be made or do not resolve (Windows without Developer Mode or admin
// rights, Wine), the snapshot's file is a hard link to the blob instead, else a copy of it,
// as huggingface_hub falls back to a copy there: readers see a regular file either way.
func (c Cache) Link(repo, commit, path, etag string) error {
	link := filepath.Join(c.SnapshotDir(repo, commit), filepath.FromSlash(path))
	blob := c.BlobPath(repo, etag)
	target, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if cur, err := os.Readlink(link); err == nil && cur == target || sameFile(link, blob) {
		return nil // a rename over a hard link to the same file would leave the temporary name
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err := replaceWith(link, func(tmp string) error { return symlink(target, tmp) }); err == nil {
		return nil
	}
	if err := replaceWith(link, func(tmp string) error { return linkOrCopy(blob, tmp) }); err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	return nil
}

// symlink is os.Symlink; a test stands a system without symlinks in for it.
var symlink = os.Symlink

// replaceWith replaces name, atomically, with the file makeTmp makes at a temporary name beside
// it, which must resolve to a file.
func replaceWith(name string, makeTmp func(tmp string) error) error {
	tmp := name + "." + randomSuffix() + ".tmp"
	err := makeTmp(tmp)
	if err == nil && !resolves(tmp) {
		err = fmt.Errorf("%s does not resolve", tmp)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		_ = os.Remove(tmp) // the error above is the one to tell; a stray .tmp is never read
	}
	return err
}

// sameFile says whether a and b are the same file (a hard link of the other).
func sameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// resolves says whether the link leads to a file.
func resolves(link string) bool {
	_, err := os.Stat(link)
	return err == nil
}

// linkOrCopy makes dst a hard link to src, else a copy of it.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // the copy's error is the one to tell
		return err
	}
	return out.Close()
}

// Linked reports whether snapshots/COMMIT/PATH already points at a blob of the given size.
func (c Cache) Linked(repo, commit, path string, size int64) bool {
	info, err := os.Stat(filepath.Join(c.SnapshotDir(repo, commit), filepath.FromSlash(path)))
	return err == nil && info.Mode().IsRegular() && info.Size() == size
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SnapshotFiles lists the files of a cached snapshot (paths with forward slashes), for
// offline use. Dangling links are reported as missing.
func (c Cache) SnapshotFiles(repo, commit string) (present []string, missing []string, err error) {
	root := c.SnapshotDir(repo, commit)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if _, serr := os.Stat(p); serr != nil {
			missing = append(missing, rel)
			return nil
		}
		present = append(present, rel)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no cached snapshot of %s at %s", repo, commit)
	}
	return present, missing, err
}
