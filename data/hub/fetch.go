package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrCorrupt marks content whose size or hash is not what the listing promised, even after
// downloading it again.
var ErrCorrupt = errors.New("content does not match its hash")

// mismatchTries is how often a file whose content fails verification is downloaded afresh.
const mismatchTries = 3

// copyBuffers keeps memory bounded whatever the file size: one buffer per download in flight.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// Fetch makes sure the content of a listed file is in the cache, verified, and linked from the
// snapshot of commit. It resumes a partial download left by an earlier run (of aa-grade or
// huggingface_hub), retries transient failures, and never moves unverified content into
// blobs/ or snapshots/. onBytes, if set, hears about every chunk written. It returns the bytes
// downloaded.
func (c *Client) Fetch(
	ctx context.Context,
	cache Cache,
	repo, commit string,
	e Entry,
	onBytes func(int64),
) (int64, error) {
	etag, size := e.ETag(), e.ContentSize()
	if !validETag(etag) {
		return 0, fmt.Errorf("%s: the listing gives %q as its hash", e.Path, etag)
	}
	if cache.Linked(repo, commit, e.Path, size) {
		return 0, nil
	}
	blob := cache.BlobPath(repo, etag)
	if info, err := os.Stat(blob); err == nil && info.Size() == size {
		return 0, cache.Link(repo, commit, e.Path, etag)
	}
	unlock, err := lockFile(ctx, cache.LockPath(repo, etag))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", e.Path, err)
	}
	defer unlock()
	if info, err := os.Stat(blob); err == nil && info.Size() == size {
		return 0, cache.Link(repo, commit, e.Path, etag) // another process finished it
	}
	var downloaded int64
	for try := 1; ; try++ {
		n, err := c.download(ctx, cache, repo, commit, e, onBytes)
		downloaded += n
		if err == nil {
			break
		}
		if !errors.Is(err, ErrCorrupt) || try >= mismatchTries {
			return downloaded, fmt.Errorf("%s: %w", e.Path, err)
		}
		_ = os.Remove(
			cache.IncompletePath(repo, etag)) // one that stays is hashed again, and found corrupt again, by the next try
	}
	if err := os.Rename(cache.IncompletePath(repo, etag), blob); err != nil {
		return downloaded, fmt.Errorf("%s: %w", e.Path, err)
	}
	return downloaded, cache.Link(repo, commit, e.Path, etag)
}

// download brings the .incomplete file to its full size, resuming across transient failures,
// hashing the content as it is written, and verifies it. On success the file is complete and
// verified.
func (c *Client) download(
	ctx context.Context,
	cache Cache,
	repo, commit string,
	e Entry,
	onBytes func(int64),
) (_ int64, err error) {
	partial := cache.IncompletePath(repo, e.ETag())
	if err := os.MkdirAll(filepath.Dir(partial), 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() {
		// The content was hashed as it was written: a write that fails only at the close
		// would leave a blob that does not hold what was verified.
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	sum := newContentHash(e)
	// Hash what an earlier run left, which also leaves the offset at its end.
	if err := copyBuffered(sum, f); err != nil {
		return 0, err
	}
	var downloaded int64
	for attempt := 1; ; attempt++ {
		n, err := c.resume(ctx, f, sum, repo, commit, e, onBytes)
		downloaded += n
		if err == nil {
			break
		}
		if !Transient(err) || ctx.Err() != nil {
			return downloaded, err
		}
		if attempt >= c.Retry.Attempts {
			return downloaded, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		var retryAfter time.Duration
		var he *Error
		if errors.As(err, &he) {
			retryAfter = he.retryAfter
		}
		if n > 0 {
			attempt = 0 // progress was made: the connection is worth trying again in full
		}
		if err := c.backoff(ctx, e.Path, max(attempt, 1), retryAfter, err); err != nil {
			return downloaded, err
		}
	}
	if sum.n != e.ContentSize() {
		return downloaded, fmt.Errorf("%w: %d bytes, expected %d", ErrCorrupt, sum.n, e.ContentSize())
	}
	if got := sum.hex(); got != e.ETag() {
		return downloaded, fmt.Errorf("%w: got %s, expected %s", ErrCorrupt, got, e.ETag())
	}
	return downloaded, nil
}

// resume requests the rest of the file from the current size of f and appends it, feeding
// the hash as it goes.
func (c *Client) resume(
	ctx context.Context,
	f *os.File,
	sum *contentHash,
	repo, commit string,
	e Entry,
	onBytes func(int64),
) (int64, error) {
	size := e.ContentSize()
	have := sum.n
	if have > size {
		if err := restart(f, sum); err != nil {
			return 0, err
		}
		have = 0
	}
	if have == size {
		return 0, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	header := http.Header{}
	if have > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	want := expected{commit: commit, etag: e.ETag(), size: size}
	resp, err := c.getOnce(context.WithValue(ctx, expectKey{}, want), c.resolveURL(repo, commit, e.Path), repo, header)
	var he *Error
	if errors.As(err, &he) && he.Status == http.StatusRequestedRangeNotSatisfiable {
		// The partial file is not a prefix of this content: start again.
		if err := restart(f, sum); err != nil {
			return 0, err
		}
		return 0, errRestart
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.Request.URL.Host == c.endpointHost() { // served by the Hub itself, not redirected
		if err := want.check(resp.Header); err != nil {
			return 0, err
		}
	}
	if resp.StatusCode == http.StatusPartialContent && rangeStart(resp.Header.Get("Content-Range")) != have {
		return 0, fmt.Errorf("%w: asked for bytes from %d, got %q", io.ErrUnexpectedEOF, have,
			resp.Header.Get("Content-Range"))
	}
	if resp.StatusCode != http.StatusPartialContent && have > 0 {
		if err := restart(f, sum); err != nil { // the server ignored Range: start again
			return 0, err
		}
		have = 0
	}
	body := newStallReader(resp.Body, c.readTimeout(), cancel)
	defer body.stop()
	out := io.MultiWriter(f, sum)
	bufp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bufp)
	var written int64
	for written < size-have {
		n, rerr := body.Read((*bufp)[:min(int64(len(*bufp)), size-have-written)])
		if n > 0 {
			if _, werr := out.Write((*bufp)[:n]); werr != nil {
				return written, werr
			}
			written += int64(n)
			if onBytes != nil {
				onBytes(int64(n))
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				return written, cause
			}
			return written, rerr
		}
	}
	if have+written < size {
		return written, fmt.Errorf("%w: body ended after %d of %d bytes", io.ErrUnexpectedEOF, have+written, size)
	}
	return written, nil
}

// errRestart asks the caller to request the file again from its start.
var errRestart = fmt.Errorf("%w: restarting from the first byte", io.ErrUnexpectedEOF)

// restart empties the partial file and its hash.
func restart(f *os.File, sum *contentHash) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sum.reset()
	return nil
}

// rangeStart reads the first byte position of a Content-Range header ("bytes 100-199/200").
func rangeStart(v string) int64 {
	v = strings.TrimPrefix(strings.TrimSpace(v), "bytes ")
	start, _, _ := strings.Cut(v, "-")
	n, err := strconv.ParseInt(start, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// contentHash computes the hash that names a file's blob while the content streams through:
// sha256 of the content for LFS and Xet files, the git blob sha1 (sha1 of "blob <size>\x00"
// and the content) otherwise.
type contentHash struct {
	h hash.Hash
	e Entry
	n int64 // content bytes hashed
}

func newContentHash(e Entry) *contentHash {
	c := &contentHash{e: e}
	c.reset()
	return c
}

func (c *contentHash) reset() {
	if c.e.LFS != nil {
		c.h = sha256.New()
	} else {
		c.h = sha1.New()
		_, _ = fmt.Fprintf(c.h, "blob %d\x00", c.e.ContentSize()) // a hash's Write never fails
	}
	c.n = 0
}

func (c *contentHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *contentHash) hex() string { return hex.EncodeToString(c.h.Sum(nil)) }

// HashContent computes the hash naming a file's blob from its content (see contentHash).
func HashContent(r io.Reader, e Entry) (string, error) {
	sum := newContentHash(e)
	if err := copyBuffered(sum, r); err != nil {
		return "", err
	}
	return sum.hex(), nil
}

func copyBuffered(w io.Writer, r io.Reader) error {
	bufp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bufp)
	_, err := io.CopyBuffer(w, r, *bufp)
	return err
}

// validETag accepts only hex hashes, so a hostile listing cannot name a path.
func validETag(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func (c *Client) endpointHost() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

func (c *Client) readTimeout() time.Duration {
	if c.ReadTimeout > 0 {
		return c.ReadTimeout
	}
	return time.Minute
}

// errStalled ends a download whose body stops delivering bytes.
var errStalled = fmt.Errorf("%w: no data for too long", io.ErrUnexpectedEOF)

// stallReader cancels the request when no byte arrives for the timeout.
type stallReader struct {
	r       io.Reader
	timer   *time.Timer
	timeout time.Duration
}

func newStallReader(r io.Reader, timeout time.Duration, cancel context.CancelCauseFunc) *stallReader {
	return &stallReader{r: r, timeout: timeout, timer: time.AfterFunc(timeout, func() { cancel(errStalled) })}
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.timeout)
	}
	return n, err
}

func (s *stallReader) stop() { s.timer.Stop() }
