// Package fakeregistry is an OCI distribution registry for tests, listening on 127.0.0.1 and
// speaking the real protocol: manifests by tag or digest with content negotiation, blobs,
// the Bearer token flow (anonymous, or with a user and password) and the registry's JSON
// errors. Its failure modes are available on demand: 429 with Retry-After, 5xx, a blob that
// does not match its digest, a connection dropped before the answer or cut mid-blob.
package fakeregistry

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Fault is one misbehaviour, served once, for a request whose path ends with its key.
type Fault struct {
	Status     int    // answer this status
	RetryAfter string // with this Retry-After header
	Corrupt    bool   // a blob of the right length but other bytes
	Cut        bool   // half the blob, then the connection drops
	Drop       bool   // the connection drops before any answer
}

// Registry is a running fake registry.
type Registry struct {
	Host string // 127.0.0.1:PORT, the reference's registry part

	auth auth // under mu

	srv       *httptest.Server
	requests  atomic.Int64
	mu        sync.Mutex
	blobs     map[string]blob
	manifests map[string]manifest // by repository and tag or digest
	faults    map[string][]Fault
}

// auth is what the registry asks of a client: token, when set, is required as a Bearer
// token, which /token hands out to anyone, or only to user and password when user is set.
type auth struct {
	token, user, password string
}

// SetAuth makes the registry require a token (none: "") that /token hands out to anyone, or
// only to user and password when user is set. It can change while the registry serves.
func (r *Registry) SetAuth(token, user, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = auth{token, user, password}
}

// authNow is the auth in force.
func (r *Registry) authNow() auth {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.auth
}

type blob struct {
	data []byte
	path string // or a file's content
}

type manifest struct {
	mediaType string
	body      []byte
}

// New starts a registry; it stops with the test.
func New(t interface{ Cleanup(func()) }) *Registry {
	r := &Registry{blobs: map[string]blob{}, manifests: map[string]manifest{}, faults: map[string][]Fault{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	t.Cleanup(r.srv.Close)
	return r
}

// Requests counts the requests served so far.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// Fail serves f, once, to the next request whose path ends with suffix; several queue.
func (r *Registry) Fail(suffix string, f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[suffix] = append(r.faults[suffix], f)
}

// Descriptor is a blob or manifest as a manifest points at it.
type Descriptor struct {
	MediaType string            `json:"mediaType"`
	Digest    string            `json:"digest"`
	Size      int64             `json:"size"`
	Platform  map[string]string `json:"platform,omitempty"`
}

// PutBlob stores data and returns its descriptor.
func (r *Registry) PutBlob(mediaType string, data []byte) Descriptor {
	d := Descriptor{MediaType: mediaType, Digest: digest(data), Size: int64(len(data))}
	r.mu.Lock()
	r.blobs[d.Digest] = blob{data: data}
	r.mu.Unlock()
	return d
}

// PutBlobFile stores a file's content (read on each request: large layers stay on disk).
func (r *Registry) PutBlobFile(mediaType, path string) (Descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return Descriptor{}, err
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	n, err := f.WriteTo(h)
	if err != nil {
		return Descriptor{}, err
	}
	d := Descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: n}
	r.mu.Lock()
	r.blobs[d.Digest] = blob{path: path}
	r.mu.Unlock()
	return d, nil
}

// PutManifest stores a manifest under its digest and, when tag is not empty, the tag.
func (r *Registry) PutManifest(repo, tag, mediaType string, body []byte) Descriptor {
	d := Descriptor{MediaType: mediaType, Digest: digest(body), Size: int64(len(body))}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifests[repo+":"+d.Digest] = manifest{mediaType, body}
	if tag != "" {
		r.manifests[repo+":"+tag] = manifest{mediaType, body}
	}
	return d
}

// Image is an image's content: its config and its layers, bottom first.
type Image struct {
	Config []byte
	Layers []Descriptor // stored already with PutBlob or PutBlobFile
}

// PushImage stores an image's config and manifest (of mediaType, OCI or Docker v2) under tag.
func (r *Registry) PushImage(repo, tag, mediaType string, img Image) Descriptor {
	configType := "application/vnd.oci.image.config.v1+json"
	if strings.Contains(mediaType, "docker") {
		configType = "application/vnd.docker.container.image.v1+json"
	}
	config := r.PutBlob(configType, img.Config)
	body, _ := json.Marshal(
		map[string]any{"schemaVersion": 2, "mediaType": mediaType, "config": config, "layers": img.Layers})
	return r.PutManifest(repo, tag, mediaType, body)
}

// PushIndex stores an index (OCI, or a Docker manifest list) of manifests stored already,
// each with its platform, under tag.
func (r *Registry) PushIndex(repo, tag, mediaType string, manifests []Descriptor) Descriptor {
	body, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaType, "manifests": manifests})
	return r.PutManifest(repo, tag, mediaType, body)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if req.URL.Path == "/token" {
		r.serveToken(w, req)
		return
	}
	if a := r.authNow(); a.token != "" && req.Header.Get("Authorization") != "Bearer "+a.token {
		scope := ""
		if repo, _, ok := splitAPIPath(req.URL.Path); ok {
			scope = fmt.Sprintf(`,scope="repository:%s:pull"`, repo)
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="fake-registry"%s`, r.srv.URL, scope))
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return
	}
	if req.URL.Path == "/v2/" {
		w.WriteHeader(http.StatusOK)
		return
	}
	f, ok := r.fault(req.URL.Path)
	if f.Drop {
		panic(http.ErrAbortHandler)
	}
	if ok && f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, f.Status, "UNAVAILABLE", "the fake registry fails on purpose")
		return
	} else if ok {
		r.serveBlob(w, req, f)
		return
	}
	repo, object, ok := splitAPIPath(req.URL.Path)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
	case strings.HasPrefix(object, "manifests/"):
		r.mu.Lock()
		m, found := r.manifests[repo+":"+strings.TrimPrefix(object, "manifests/")]
		r.mu.Unlock()
		if !found {
			writeError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		if accept := strings.Join(req.Header.Values("Accept"), ","); accept != "" &&
			!strings.Contains(accept, m.mediaType) {
			writeError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "no manifest of an accepted media type")
			return
		}
		w.Header().Set("Content-Type", m.mediaType)
		w.Header().Set("Docker-Content-Digest", digest(m.body))
		w.Header().Set("Content-Length", strconv.Itoa(len(m.body)))
		_, _ = w.Write(m.body) // a failed write is the client's to see
	default:
		r.serveBlob(w, req, Fault{})
	}
}

// splitAPIPath reads /v2/<repository>/(manifests|blobs)/<reference>.
func splitAPIPath(p string) (repo, object string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", false
	}
	for _, kind := range []string{"/manifests/", "/blobs/"} {
		if i := strings.LastIndex(rest, kind); i > 0 {
			return rest[:i], rest[i+1:], true
		}
	}
	return "", "", false
}

func (r *Registry) serveBlob(w http.ResponseWriter, req *http.Request, f Fault) {
	_, object, _ := splitAPIPath(req.URL.Path)
	r.mu.Lock()
	b, found := r.blobs[strings.TrimPrefix(object, "blobs/")]
	r.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
		return
	}
	data := b.data
	if b.path != "" && (f.Corrupt || f.Cut) {
		var err error
		if data, err = os.ReadFile(b.path); err != nil {
			writeError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	switch {
	case f.Corrupt:
		bad := append([]byte(nil), data...)
		bad[len(bad)/2] ^= 0xff
		w.Header().Set("Content-Length", strconv.Itoa(len(bad)))
		_, _ = w.Write(bad) // a failed write is the client's to see
	case f.Cut:
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()    // the status and half the body are on their way
		panic(http.ErrAbortHandler) // drops the connection
	case b.path != "":
		http.ServeFile(w, req, b.path)
	default:
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data) // a failed write is the client's to see
	}
}

func (r *Registry) fault(path string) (Fault, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for suffix, queue := range r.faults {
		if len(queue) > 0 && strings.HasSuffix(path, suffix) {
			r.faults[suffix] = queue[1:]
			return queue[0], true
		}
	}
	return Fault{}, false
}

// serveToken hands out the token, to anyone or to its user only.
func (r *Registry) serveToken(w http.ResponseWriter, req *http.Request) {
	a := r.authNow()
	if a.user != "" {
		user, password, ok := req.BasicAuth()
		if !ok || user != a.user || password != a.password {
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "bad credentials")
			return
		}
	}
	if req.URL.Query().Get("service") != "fake-registry" || req.URL.Query().Get("scope") == "" {
		writeError(w, http.StatusBadRequest, "DENIED", "service and scope are required")
		return
	}
	sendJSON(w, map[string]string{"token": a.token})
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	sendJSON(w, map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
}

// BasicAuth is the value of a Docker config.json auths entry for a user and password.
func BasicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// sendJSON writes v as the response's body; a write that fails is the client's under test to
// see.
func sendJSON(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
