// Package fakehub is a Hugging Face Hub for tests and benchmarks, listening on 127.0.0.1 and
// speaking the real protocol: revision, paginated recursive tree, paths-info, resolve with Range,
// ETag headers and a cross-host redirect to a second "CDN" server for LFS/Xet files. Its
// failure modes are available on demand: 429 with Retry-After, 5xx, a connection cut
// mid-body, a stalled body, wrong content, gated and missing repositories and revisions.
package fakehub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File is one file of a repository at a commit.
type File struct {
	Content []byte
	LFS     bool // stored in LFS/Xet: listed with an lfs object and served from the CDN
}

// Repo is one dataset repository.
type Repo struct {
	Name    string            // OWNER/NAME
	Refs    map[string]string // branch, tag or convert ref -> commit
	Commits map[string]map[string]File
	Gated   bool // every request needs the hub's token
}

// Fault is one misbehaviour, served once, for a file's content request.
type Fault struct {
	Status     int           // answer this status instead of the content
	RetryAfter string        // with this Retry-After header
	CutAfter   int64         // send this many bytes of the body, then drop the connection
	Stall      time.Duration // send CutAfter bytes, then go silent this long
	Corrupt    bool          // send content of the right length but wrong bytes
	Stale      bool          // answer the resolve with another commit's X-Repo-Commit
}

// Hub is a running fake Hub and its CDN.
type Hub struct {
	URL, CDNURL string
	PageSize    int    // tree entries per page
	Token       string // the token a gated repository accepts

	hub, cdn *httptest.Server
	rate     atomic.Int64 // content bytes per second per response; 0 is unlimited
	etags    sync.Map     // etagKey -> string
	mu       sync.Mutex
	repos    map[string]*Repo
	faults   map[string][]Fault
	served   map[string]int64 // path -> content bytes sent
	requests []Request
}

// Request is what the hub or CDN saw of one request.
type Request struct {
	Server        string // hub or cdn
	Path          string // URL path as received
	Range         string
	Authorization string
}

// New starts a hub and its CDN on 127.0.0.1.
func New() *Hub {
	h := &Hub{PageSize: 50, repos: map[string]*Repo{}, faults: map[string][]Fault{}, served: map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/datasets/{owner}/{name}/revision/{rev}", h.revision)
	mux.HandleFunc("GET /api/datasets/{owner}/{name}/tree/{rev}", h.tree)
	mux.HandleFunc("GET /api/datasets/{owner}/{name}/tree/{rev}/{path...}", h.tree)
	mux.HandleFunc("POST /api/datasets/{owner}/{name}/paths-info/{rev}", h.pathsInfo)
	mux.HandleFunc("GET /datasets/{owner}/{name}/resolve/{rev}/{path...}", h.resolve)
	mux.HandleFunc("HEAD /datasets/{owner}/{name}/resolve/{rev}/{path...}", h.resolve)
	h.hub = httptest.NewServer(h.record("hub", mux))
	cdn := http.NewServeMux()
	cdn.HandleFunc("GET /xet/{repo}/{commit}/{path...}", h.cdnBlob)
	h.cdn = httptest.NewServer(h.record("cdn", cdn))
	h.URL, h.CDNURL = h.hub.URL, h.cdn.URL
	return h
}

// Close stops both servers.
func (h *Hub) Close() {
	h.hub.CloseClientConnections()
	h.cdn.CloseClientConnections()
	h.hub.Close()
	h.cdn.Close()
}

// AddRepo serves a repository. Commit returns the sha to use in its Refs.
func (h *Hub) AddRepo(r *Repo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[r.Name] = r
}

// Commit derives a stable commit sha from a tree of files.
func Commit(files map[string]File) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	s := sha1.New()
	for _, p := range paths {
		fmt.Fprintf(s, "%s %s\n", p, ETag(files[p]))
	}
	return hex.EncodeToString(s.Sum(nil))
}

// ETag is the hash the Hub names a file by: sha256 for LFS files, git blob sha1 otherwise.
func ETag(f File) string {
	if f.LFS {
		sum := sha256.Sum256(f.Content)
		return hex.EncodeToString(sum[:])
	}
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(f.Content))
	s.Write(f.Content)
	return hex.EncodeToString(s.Sum(nil))
}

// Fail queues faults for the next content requests of a file path.
func (h *Hub) Fail(path string, faults ...Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults[path] = append(h.faults[path], faults...)
}

// Served is how many content bytes of a path were sent so far.
func (h *Hub) Served(path string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[path]
}

// Requests returns what both servers saw.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

func (h *Hub) record(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests = append(h.requests, Request{Server: server, Path: r.URL.EscapedPath(), Range: r.Header.Get("Range"),
			Authorization: r.Header.Get("Authorization")})
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	sendJSON(w, map[string]string{"error": msg})
}

// lookup finds the repository and commit of a request, answering the Hub's errors itself.
func (h *Hub) lookup(w http.ResponseWriter, r *http.Request) (*Repo, string, bool) {
	name := r.PathValue("owner") + "/" + r.PathValue("name")
	h.mu.Lock()
	repo := h.repos[name]
	h.mu.Unlock()
	if repo == nil {
		hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return nil, "", false
	}
	if repo.Gated && r.Header.Get("Authorization") != "Bearer "+h.Token {
		hubError(w, http.StatusForbidden, "GatedRepo",
			"Access to dataset "+name+" is restricted. You must have access to it and be authenticated to access it.")
		return nil, "", false
	}
	rev := r.PathValue("rev")
	commit, ok := repo.Refs[rev]
	if !ok {
		if _, isCommit := repo.Commits[rev]; isCommit {
			commit, ok = rev, true
		}
	}
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil, "", false
	}
	return repo, commit, true
}

func (h *Hub) revision(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.lookup(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	sendJSON(w, map[string]any{"id": repo.Name, "sha": commit, "private": false, "gated": repo.Gated})
}

type treeEntry struct {
	Type    string   `json:"type"`
	OID     string   `json:"oid"`
	Size    int64    `json:"size"`
	Path    string   `json:"path"`
	LFS     *lfsInfo `json:"lfs,omitempty"`
	XetHash string   `json:"xetHash,omitempty"`
}

type lfsInfo struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int64  `json:"pointerSize"`
}

// fileEntry is how the tree and paths-info endpoints describe a file.
func (h *Hub) fileEntry(path string, f File) treeEntry {
	e := treeEntry{Type: "file", Path: path, Size: int64(len(f.Content)), OID: h.etag(File{Content: f.Content})}
	if f.LFS {
		sum := h.etag(f)
		e.LFS = &lfsInfo{OID: sum, Size: int64(len(f.Content)), PointerSize: 134}
		e.XetHash = sum[:32]
	}
	return e
}

type etagKey struct {
	data *byte
	n    int
	lfs  bool
}

// etag is ETag memoised per content, so large files are hashed once, not on every request.
func (h *Hub) etag(f File) string {
	var k etagKey
	if len(f.Content) > 0 {
		k = etagKey{&f.Content[0], len(f.Content), f.LFS}
	}
	if v, ok := h.etags.Load(k); ok {
		return v.(string)
	}
	v := ETag(f)
	h.etags.Store(k, v)
	return v
}

// pathsInfo describes the listed paths (the JavaScript client asks before each download).
func (h *Hub) pathsInfo(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.lookup(w, r)
	if !ok {
		return
	}
	var req struct {
		Paths []string `json:"paths"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		hubError(w, http.StatusBadRequest, "", err.Error())
		return
	}
	out := []treeEntry{}
	for _, p := range req.Paths {
		if f, ok := repo.Commits[commit][p]; ok {
			out = append(out, h.fileEntry(p, f))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	sendJSON(w, out)
}

// tree lists files and directories under a path, recursively, a page at a time.
func (h *Hub) tree(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.lookup(w, r)
	if !ok {
		return
	}
	prefix := strings.Trim(r.PathValue("path"), "/")
	files := repo.Commits[commit]
	dirs := map[string]bool{}
	var entries []treeEntry
	for p, f := range files {
		if prefix != "" && p != prefix && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		for d := p; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			if prefix == "" || strings.HasPrefix(d, prefix+"/") {
				dirs[d] = true
			}
		}
		entries = append(entries, h.fileEntry(p, f))
	}
	if len(entries) == 0 {
		hubError(w, http.StatusNotFound, "EntryNotFound", prefix+" does not exist on "+commit)
		return
	}
	for d := range dirs {
		entries = append(entries, treeEntry{Type: "directory", Path: d, OID: strings.Repeat("0", 40)})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	cursor, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(cursor+h.PageSize, len(entries))
	if cursor < end && end < len(entries) {
		next := *r.URL
		q := next.Query()
		q.Set("cursor", strconv.Itoa(end))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, h.URL, next.RequestURI()))
	}
	w.Header().Set("Content-Type", "application/json")
	sendJSON(w, entries[min(cursor, len(entries)):end])
}

// resolve serves a small file itself and redirects an LFS file to the CDN, with the headers
// the Hub sends.
func (h *Hub) resolve(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := h.lookup(w, r)
	if !ok {
		return
	}
	path := r.PathValue("path")
	f, exists := repo.Commits[commit][path]
	if !exists {
		hubError(w, http.StatusNotFound, "EntryNotFound", path+" does not exist on "+commit)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	h.mu.Lock()
	if q := h.faults[path]; len(q) > 0 && q[0].Stale {
		h.faults[path] = q[1:]
		w.Header().Set("X-Repo-Commit", strings.Repeat("0", 40))
	}
	h.mu.Unlock()
	if f.LFS {
		w.Header().Set("X-Linked-Etag", `"`+h.etag(f)+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Content)))
		w.Header().Set("ETag", `"`+h.etag(File{Content: f.Content})+`"`)
		loc := fmt.Sprintf("%s/xet/%s/%s/%s?sig=%s", h.CDNURL, url.PathEscape(repo.Name), commit, path, h.etag(f)[:8])
		http.Redirect(w, r, loc, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+h.etag(f)+`"`)
	h.serveContent(w, r, path, f.Content)
}

func (h *Hub) cdnBlob(w http.ResponseWriter, r *http.Request) {
	name, _ := url.PathUnescape(r.PathValue("repo"))
	h.mu.Lock()
	repo := h.repos[name]
	h.mu.Unlock()
	if repo == nil {
		http.NotFound(w, r)
		return
	}
	f, ok := repo.Commits[r.PathValue("commit")][r.PathValue("path")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+h.etag(f)+`"`)
	h.serveContent(w, r, r.PathValue("path"), f.Content)
}

// serveContent answers a content request, honouring `Range: bytes=N-` and any queued fault.
func (h *Hub) serveContent(w http.ResponseWriter, r *http.Request, path string, content []byte) {
	h.mu.Lock()
	var fault *Fault
	if q := h.faults[path]; len(q) > 0 && !q[0].Stale && r.Method == http.MethodGet {
		fault, h.faults[path] = &q[0], q[1:]
	}
	h.mu.Unlock()
	if fault != nil && fault.Status != 0 {
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		hubError(w, fault.Status, "", http.StatusText(fault.Status))
		return
	}
	start, end := int64(0), int64(len(content))
	if rg := r.Header.Get("Range"); rg != "" {
		var ok bool
		if start, end, ok = parseRange(rg, int64(len(content))); !ok {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(content)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(content)))
	}
	partial := r.Header.Get("Range") != ""
	body := content[start:end]
	if fault != nil && fault.Corrupt {
		body = slices.Clone(body)
		for i := range body {
			body[i] ^= 0x5a
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Type", "application/octet-stream")
	if partial {
		w.WriteHeader(http.StatusPartialContent)
	}
	if r.Method == http.MethodHead {
		return
	}
	if fault != nil && (fault.CutAfter > 0 || fault.Stall > 0) {
		cut := min(fault.CutAfter, int64(len(body)))
		n, _ := w.Write(body[:cut])
		h.count(path, n)
		rc := http.NewResponseController(w)
		_ = rc.Flush() // as the write before it: the client's to see
		if fault.Stall > 0 {
			select {
			case <-time.After(fault.Stall):
			case <-r.Context().Done():
			}
		}
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close() // the fault: the connection cut
		}
		return
	}
	h.write(w, path, body)
}

// SetRate slows every content response down to bytesPerSecond (0: no limit), for tests that
// must catch a download in the middle.
func (h *Hub) SetRate(bytesPerSecond int64) { h.rate.Store(bytesPerSecond) }

// write sends a body, at the set rate if any.
func (h *Hub) write(w http.ResponseWriter, path string, body []byte) {
	rate := h.rate.Load()
	chunk := len(body)
	if rate > 0 {
		chunk = int(max(rate/20, 1)) // 20 writes a second
	}
	rc := http.NewResponseController(w)
	for len(body) > 0 {
		n, err := w.Write(body[:min(chunk, len(body))])
		h.count(path, n)
		if err != nil {
			return
		}
		body = body[n:]
		if rate > 0 {
			_ = rc.Flush() // a failure shows at the next write
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (h *Hub) count(path string, n int) {
	h.mu.Lock()
	h.served[path] += int64(n)
	h.mu.Unlock()
}

// parseRange reads `bytes=A-` or `bytes=A-B` into a half-open interval.
func parseRange(v string, size int64) (start, end int64, ok bool) {
	a, b, found := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	start, err := strconv.ParseInt(a, 10, 64)
	if !found || err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end = size
	if b != "" {
		last, err := strconv.ParseInt(b, 10, 64)
		if err != nil || last < start {
			return 0, 0, false
		}
		end = min(last+1, size)
	}
	return start, end, true
}

// sendJSON writes v as the response's body; a write that fails is the client's under test to
// see.
func sendJSON(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
