package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/internal/backoff"
)

// Client talks to the Hub's HTTP API. Transient failures are retried with exponential backoff
// and jitter, honouring Retry-After.
type Client struct {
	Endpoint string
	Token    string
	HTTP     *http.Client
	Retry    Retry
	// ReadTimeout ends a download whose body delivers nothing for this long (it is then
	// resumed); zero means a minute.
	ReadTimeout time.Duration
	// OnRetry, when set, hears about each retry (for progress output).
	OnRetry func(url string, attempt int, wait time.Duration, err error)
}

// Retry is the backoff policy of one request.
type Retry struct {
	Attempts      int           // tries in all
	Base          time.Duration // the first wait; each later one doubles
	Max           time.Duration // the longest computed wait
	MaxRetryAfter time.Duration // the longest Retry-After honoured
}

// DefaultRetry rides out minutes of trouble: 8 tries, waits of 1 s doubling to 60 s, and
// Retry-After honoured up to 10 minutes.
var DefaultRetry = Retry{Attempts: 8, Base: time.Second, Max: time.Minute, MaxRetryAfter: 10 * time.Minute}

// NewClient makes a client for cfg with its own connection pool.
func NewClient(cfg Config) *Client {
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	retry := cfg.Retry
	if retry.Attempts <= 0 {
		retry = DefaultRetry
	}
	return &Client{
		Endpoint:    cfg.Endpoint,
		Token:       cfg.Token,
		Retry:       retry,
		ReadTimeout: cfg.Timeout,
		HTTP: &http.Client{
			Transport:     transport,
			CheckRedirect: dropAuthAcrossHosts,
		},
	}
}

// dropAuthAcrossHosts keeps the token on the Hub: a redirect to any other host (a CDN, or the
// same host on another port) loses the Authorization header.
// The Hub's own answer to a content request (the redirect, for LFS files) is checked
// against the listing before any byte is read.
func dropAuthAcrossHosts(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del("Authorization")
	}
	if want, ok := req.Context().Value(expectKey{}).(expected); ok && req.Response != nil &&
		req.Response.Request.URL.Host == via[0].URL.Host {
		return want.check(req.Response.Header)
	}
	return nil
}

// expected is what the listing says a content request must serve.
type expected struct {
	commit, etag string
	size         int64
}

type expectKey struct{}

// check compares the Hub's X-Repo-Commit, X-Linked-Etag (or ETag) and X-Linked-Size with the
// listing; absent headers are not an error.
func (w expected) check(h http.Header) error {
	if c := h.Get("X-Repo-Commit"); c != "" && c != w.commit {
		return fmt.Errorf("%w: the Hub serves commit %s, expected %s", ErrCorrupt, c, w.commit)
	}
	etag := h.Get("X-Linked-Etag")
	if etag == "" {
		etag = h.Get("ETag")
	}
	if etag = strings.Trim(strings.TrimPrefix(etag, "W/"), `"`); etag != "" && etag != w.etag {
		return fmt.Errorf("%w: the Hub serves version %s, the listing says %s", ErrCorrupt, etag, w.etag)
	}
	if s := h.Get("X-Linked-Size"); s != "" && s != strconv.FormatInt(w.size, 10) {
		return fmt.Errorf("%w: the Hub serves %s bytes, the listing says %d", ErrCorrupt, s, w.size)
	}
	return nil
}

// Error is an HTTP error answered by the Hub.
type Error struct {
	Status  int
	Code    string // X-Error-Code: RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo
	Message string
	URL     string
	Repo    string

	retryAfter time.Duration
}

// Sentinels for errors.Is on an *Error.
var (
	ErrRepoNotFound     = errors.New("repository not found")
	ErrRevisionNotFound = errors.New("revision not found")
	ErrEntryNotFound    = errors.New("file not found")
	ErrGated            = errors.New("gated repository")
	ErrUnauthorized     = errors.New("unauthorized")
)

func (e *Error) Is(target error) bool {
	switch target {
	case ErrRepoNotFound:
		return e.Code == "RepoNotFound"
	case ErrRevisionNotFound:
		return e.Code == "RevisionNotFound"
	case ErrEntryNotFound:
		return e.Code == "EntryNotFound" || (e.Code == "" && e.Status == http.StatusNotFound)
	case ErrGated:
		return e.Code == "GatedRepo"
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	}
	return false
}

func (e *Error) Error() string {
	switch {
	case e.Code == "GatedRepo":
		return fmt.Sprintf(
			"dataset %s is gated: accept its terms at https://huggingface.co/datasets/%s and set HF_TOKEN to a token of "+
				"that account", e.Repo, e.Repo)
	case e.Code == "RepoNotFound" || (e.Status == http.StatusUnauthorized && e.Code == ""):
		return fmt.Sprintf("dataset %s not found, or private: check the name, or set HF_TOKEN (HTTP %d)", e.Repo, e.Status)
	case e.Code == "RevisionNotFound":
		return fmt.Sprintf("dataset %s has no such revision (HTTP %d): %s", e.Repo, e.Status, e.Message)
	case e.Code == "EntryNotFound":
		return fmt.Sprintf("dataset %s has no such file: %s", e.Repo, e.URL)
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("HTTP %d from %s: %s", e.Status, e.URL, msg)
}

// transientStatus lists the answers worth retrying.
func transientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// Transient reports whether an error is worth retrying: a network failure, a timeout, a body
// cut short, or a transient HTTP status.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var he *Error
	if errors.As(err, &he) {
		return transientStatus(he.Status)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return false // the host does not exist: waiting will not change that
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe") ||
		errors.Is(err, io.EOF)
}

// get performs a GET with retries. A 4xx other than 408 and 429 fails at once. The caller
// closes the body of the returned response.
func (c *Client) get(ctx context.Context, rawURL, repo string, header http.Header) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.getOnce(ctx, rawURL, repo, header)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if !Transient(err) {
			return nil, c.noAnswer(err)
		}
		if attempt >= c.Retry.Attempts || (backoff.Unreachable(err) && attempt >= backoff.UnreachableAttempts) {
			return nil, c.noAnswer(fmt.Errorf("gave up after %d attempts: %w", attempt, err))
		}
		var retryAfter time.Duration
		var he *Error
		if errors.As(err, &he) {
			retryAfter = he.retryAfter
		}
		if err := c.backoff(ctx, rawURL, attempt, retryAfter, err); err != nil {
			return nil, err
		}
	}
}

// ErrUnreachable marks a request the Hub never answered: no network, no such host, a refused
// connection, or every attempt lost on the way; the cache may still serve what it holds.
var ErrUnreachable = errors.New("the Hub cannot be reached")

// noAnswer marks err with ErrUnreachable when no HTTP answer came (a Hub's error answer stays
// as it is), naming the endpoint.
func (c *Client) noAnswer(err error) error {
	var he *Error
	if errors.As(err, &he) {
		return err
	}
	return fmt.Errorf("%w at %s: %w", ErrUnreachable, c.Endpoint, err)
}

func (c *Client) getOnce(ctx context.Context, rawURL, repo string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", rawURL, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "aa-grade")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	he := &Error{Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), URL: rawURL, Repo: repo,
		Message: resp.Header.Get("X-Error-Message"), retryAfter: backoff.RetryAfter(resp.Header.Get("Retry-After"))}
	if he.Message == "" {
		var payload struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &payload) == nil && payload.Error != "" {
			he.Message = payload.Error
		} else {
			he.Message = strings.TrimSpace(string(body))
		}
	}
	return nil, he
}

// backoff waits before retry number attempt, reporting it to OnRetry.
func (c *Client) backoff(ctx context.Context, rawURL string, attempt int, retryAfter time.Duration, cause error) error {
	wait := backoff.Policy{Base: c.Retry.Base, Max: c.Retry.Max, MaxRetryAfter: c.Retry.MaxRetryAfter}.Delay(attempt,
		retryAfter)
	if c.OnRetry != nil {
		c.OnRetry(rawURL, attempt, wait, cause)
	}
	return backoff.Sleep(ctx, wait)
}

// getJSON fetches and decodes one JSON document (bounded to 64 MiB), returning the response
// headers too.
func (c *Client) getJSON(ctx context.Context, rawURL, repo string, into any) (http.Header, error) {
	resp, err := c.get(ctx, rawURL, repo, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into); err != nil {
		return nil, fmt.Errorf("read %s: %w", rawURL, err)
	}
	return resp.Header, nil
}

// Revision resolves a branch, tag or commit of a dataset to its commit sha.
func (c *Client) Revision(ctx context.Context, repo, rev string) (string, error) {
	var info struct {
		SHA string `json:"sha"`
	}
	u := fmt.Sprintf("%s/api/datasets/%s/revision/%s", c.Endpoint, repo, url.PathEscape(rev))
	if _, err := c.getJSON(ctx, u, repo, &info); err != nil {
		return "", fmt.Errorf("resolve revision %s of %s: %w", rev, repo, err)
	}
	if !IsCommit(info.SHA) {
		return "", fmt.Errorf("resolve revision %s of %s: the Hub answered %q, not a commit sha", rev, repo, info.SHA)
	}
	return info.SHA, nil
}

// Entry is one item of a tree listing.
type Entry struct {
	Type    string `json:"type"` // file or directory
	OID     string `json:"oid"`  // git blob sha1
	Size    int64  `json:"size"`
	Path    string `json:"path"`
	LFS     *LFS   `json:"lfs,omitempty"`
	XetHash string `json:"xetHash,omitempty"`
}

// LFS describes a file stored outside git (LFS or Xet).
type LFS struct {
	OID         string `json:"oid"` // sha256 of the content
	Size        int64  `json:"size"`
	PointerSize int64  `json:"pointerSize"`
}

// ETag is the content hash that names the file's blob in the cache: the sha256 for LFS and Xet
// files, the git blob sha1 otherwise.
func (e Entry) ETag() string {
	if e.LFS != nil {
		return e.LFS.OID
	}
	return e.OID
}

// ContentSize is the size of the file's content.
func (e Entry) ContentSize() int64 {
	if e.LFS != nil {
		return e.LFS.Size
	}
	return e.Size
}

// Tree lists the files under path (all of the repository when path is "") at a commit,
// following the Link pagination.
func (c *Client) Tree(ctx context.Context, repo, commit, path string) ([]Entry, error) {
	u := fmt.Sprintf("%s/api/datasets/%s/tree/%s", c.Endpoint, repo, url.PathEscape(commit))
	if path != "" {
		u += "/" + escapePath(path)
	}
	u += "?recursive=true&expand=false"
	var files []Entry
	for page := 0; u != ""; page++ {
		if page > 10000 {
			return nil, fmt.Errorf("list %s: more than 10000 pages", repo)
		}
		resp, err := c.get(ctx, u, repo, nil)
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", repo, err)
		}
		var entries []Entry
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&entries)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", repo, err)
		}
		for _, e := range entries {
			if e.Type == "file" {
				files = append(files, e)
			}
		}
		next, err := nextLink(resp.Header.Get("Link"), u)
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", repo, err)
		}
		u = next
	}
	return files, nil
}

// nextLink returns the rel="next" target of a Link header, resolved against the page's URL.
func nextLink(header, base string) (string, error) {
	for part := range strings.SplitSeq(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		target = strings.Trim(strings.TrimSpace(target), "<>")
		b, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		n, err := b.Parse(target)
		if err != nil {
			return "", fmt.Errorf("bad Link header %q: %w", header, err)
		}
		return n.String(), nil
	}
	return "", nil
}

// escapePath escapes each segment of a repository path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// resolveURL is where a file's content is served at a revision.
func (c *Client) resolveURL(repo, rev, path string) string {
	return fmt.Sprintf("%s/datasets/%s/resolve/%s/%s", c.Endpoint, repo, url.PathEscape(rev), escapePath(path))
}

// IsCommit reports whether s is a full git commit sha.
func IsCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
