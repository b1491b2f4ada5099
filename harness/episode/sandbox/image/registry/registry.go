// Package registry copies an image from a registry into an OCI image layout folder, over the
// OCI distribution API with net/http (no container daemon): the manifest by tag or digest,
// this machine's manifest chosen from an index, the token flow registries put in front of
// their API, and every blob checked against its digest. The image package unpacks the folder.
package registry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/workpool"
)

// Media types of manifests, as registries serve them.
const (
	MediaOCIIndex          = "application/vnd.oci.image.index.v1+json"
	MediaOCIManifest       = "application/vnd.oci.image.manifest.v1+json"
	MediaDockerList        = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaDockerManifest    = "application/vnd.docker.distribution.manifest.v2+json"
	mediaDockerSchema1     = "application/vnd.docker.distribution.manifest.v1+prettyjws"
	maxManifestSize        = 4 << 20 // the distribution spec's limit
	maxConfigSize          = 8 << 20
	concurrentBlobs        = 3
	insecureRegistriesVar  = "AA_GRADE_INSECURE_REGISTRIES"
	defaultAttempts        = 4
	defaultResponseTimeout = time.Minute
)

var acceptManifests = strings.Join([]string{MediaOCIIndex, MediaOCIManifest, MediaDockerList, MediaDockerManifest},
	", ")

// ErrUnavailable marks a failure of the network or of the registry (unreachable, or failing
// still after retries), as opposed to a reference that names nothing pullable.
var ErrUnavailable = errors.New("registry unavailable")

type unavailableError struct{ error }

func (e unavailableError) Unwrap() error        { return e.error }
func (e unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Client pulls images. New gives one set up from the environment.
type Client struct {
	HTTP *http.Client
	// PlainHTTP says which registries are spoken to without TLS.
	PlainHTTP func(host string) bool
	// Credentials gives the user and password for a registry, if any.
	Credentials func(host string) (Credentials, bool)
	// OS and Architecture select the manifest from an index.
	OS, Architecture string
	// Attempts bounds the tries of a call answered 429 or 5xx; Retry spaces them.
	Attempts int
	Retry    backoff.Policy
	// Progress, when set, is told a pull's Events (Pulling, before the layers are downloaded).
	Progress func(Event)

	mu   sync.Mutex
	auth map[string]string // the Authorization header by registry and repository
}

// New is a client for linux on this machine's architecture: HTTPS except for loopback
// registries and those listed in AA_GRADE_INSECURE_REGISTRIES (host:port, comma-separated),
// credentials from Docker's config.json, four tries of a failing call.
func New() *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = defaultResponseTimeout
	return &Client{
		HTTP:         &http.Client{Transport: t},
		PlainHTTP:    DefaultPlainHTTP,
		Credentials:  DockerConfigCredentials,
		OS:           "linux",
		Architecture: runtime.GOARCH,
		Attempts:     defaultAttempts,
		Retry:        backoff.Policy{Base: time.Second, Max: 8 * time.Second, MaxRetryAfter: 30 * time.Second},
	}
}

// DefaultPlainHTTP allows plain HTTP to a registry on this machine (localhost, 127.0.0.0/8,
// ::1), as Docker does, and to those named in AA_GRADE_INSECURE_REGISTRIES.
func DefaultPlainHTTP(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if ip := net.ParseIP(name); name == "localhost" || ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.Contains(strings.Split(os.Getenv(insecureRegistriesVar), ","), host)
}

func (c *Client) plainHTTP(host string) bool { return c.PlainHTTP != nil && c.PlainHTTP(host) }

// Descriptor points at a blob or manifest.
type Descriptor struct {
	MediaType string    `json:"mediaType,omitempty"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size,omitempty"`
	Platform  *Platform `json:"platform,omitempty"`
}

// Platform is what an index entry runs on.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Manifests []Descriptor `json:"manifests"`
	Config    *Descriptor  `json:"config"`
	Layers    []Descriptor `json:"layers"`
}

// Pull writes the image ref names, for the client's platform, as an OCI image layout in dir
// and returns its config digest. Once the config is read, have is asked whether the image is
// wanted: an error stops the pull (an image for another machine), and true means the caller
// has the image already, so the layers are not downloaded.
func (c *Client) Pull(
	ctx context.Context,
	ref Reference,
	dir string,
	have func(configDigest string, config []byte) (bool, error),
) (string, error) {
	body, desc, err := c.resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil || m.Config == nil {
		return "", fmt.Errorf("manifest %s is no image manifest", desc.Digest)
	}
	config, err := c.smallBlob(ctx, ref, *m.Config, maxConfigSize)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if cached, err := have(m.Config.Digest, config); err != nil || cached {
		return m.Config.Digest, err
	}
	for _, b := range []struct {
		digest string
		data   []byte
	}{{desc.Digest, body}, {m.Config.Digest, config}} {
		if err := atomicfile.WriteFile(blobPath(dir, b.digest), b.data); err != nil {
			return "", err
		}
	}
	if c.Progress != nil {
		var size int64
		for _, l := range m.Layers {
			size += l.Size
		}
		c.Progress(Pulling{Ref: ref, Layers: len(m.Layers), Bytes: size})
	}
	if err := c.layers(ctx, ref, m.Layers, dir); err != nil {
		return "", err
	}
	index, _ := json.Marshal(
		map[string]any{"schemaVersion": 2, "mediaType": MediaOCIIndex, "manifests": []Descriptor{desc}})
	if err := atomicfile.WriteFile(filepath.Join(dir, "index.json"), index); err != nil {
		return "", err
	}
	layout := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	if err := atomicfile.WriteFile(filepath.Join(dir, "oci-layout"), layout); err != nil {
		return "", err
	}
	return m.Config.Digest, nil
}

// layers downloads the layers, a few at once; the first failure stops the others.
func (c *Client) layers(ctx context.Context, ref Reference, layers []Descriptor, dir string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workpool.Run(ctx, concurrentBlobs, layers, func(l Descriptor) {
		if err := c.blobToFile(ctx, ref, l, blobPath(dir, l.Digest)); err != nil {
			cancel(fmt.Errorf("layer %s: %w", l.Digest, err))
		}
	})
	return context.Cause(ctx) // nil unless a download failed or ctx ended
}

// resolve fetches the manifest ref names and, from an index, the one for the client's platform.
func (c *Client) resolve(ctx context.Context, ref Reference) ([]byte, Descriptor, error) {
	object := ref.object()
	for range 3 {
		body, desc, err := c.manifest(ctx, ref, object)
		if err != nil {
			return nil, desc, err
		}
		switch desc.MediaType {
		case MediaOCIManifest, MediaDockerManifest:
			return body, desc, nil
		case mediaDockerSchema1:
			return nil, desc, errors.New(
				"the image has a Docker schema 1 manifest, which aa-grade does not read: push it again with a current Docker")
		}
		var index manifest
		if err := json.Unmarshal(body, &index); err != nil {
			return nil, desc, fmt.Errorf("manifest %s: %w", desc.Digest, err)
		}
		chosen, err := c.choose(index.Manifests)
		if err != nil {
			return nil, desc, err
		}
		object = chosen.Digest
	}
	return nil, Descriptor{}, errors.New("indexes nested too deep")
}

// choose picks the client's platform from an index's entries, or says which platforms it has.
func (c *Client) choose(entries []Descriptor) (Descriptor, error) {
	var have []string
	for _, d := range entries {
		if d.Platform == nil || d.Platform.OS == "unknown" { // attestations
			continue
		}
		if d.Platform.OS == c.OS && d.Platform.Architecture == c.Architecture &&
			(c.Architecture != "arm64" || d.Platform.Variant == "" || d.Platform.Variant == "v8") {
			return d, nil
		}
		have = append(have, strings.TrimSuffix(d.Platform.OS+"/"+d.Platform.Architecture+"/"+d.Platform.Variant, "/"))
	}
	return Descriptor{}, fmt.Errorf("the image has no %s/%s build (it has %s): pick or push an image for this machine",
		c.OS, c.Architecture, cmp.Or(strings.Join(have, ", "), "none"))
}

// manifest fetches one manifest by tag or digest and checks it against the digest.
func (c *Client) manifest(ctx context.Context, ref Reference, object string) ([]byte, Descriptor, error) {
	resp, err := c.get(ctx, ref, "/manifests/"+object, acceptManifests)
	if err != nil {
		return nil, Descriptor{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, Descriptor{}, c.statusError(ref, resp, "manifest")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestSize+1))
	if err != nil {
		return nil, Descriptor{}, unavailableError{fmt.Errorf("manifest: %w", err)}
	}
	if len(body) > maxManifestSize {
		return nil, Descriptor{}, fmt.Errorf("the manifest is over %d MiB", maxManifestSize>>20)
	}
	desc := Descriptor{Digest: digestOf(body), Size: int64(len(body))}
	if strings.HasPrefix(object, "sha256:") && desc.Digest != object {
		return nil, desc, fmt.Errorf("the manifest %s from %s does not match its digest (it hashes to %s)", object,
			ref.Registry, desc.Digest)
	}
	desc.MediaType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if desc.MediaType == "" || desc.MediaType == "application/json" {
		var m manifest
		_ = json.Unmarshal(body, &m) // a body that is not JSON leaves the media type unknown
		desc.MediaType = m.MediaType
		if m.MediaType == "" && m.Manifests != nil {
			desc.MediaType = MediaOCIIndex
		} else if m.MediaType == "" && m.Config != nil {
			desc.MediaType = MediaOCIManifest
		}
	}
	return body, desc, nil
}

// smallBlob reads a blob (the config) into memory, checked against its digest.
func (c *Client) smallBlob(ctx context.Context, ref Reference, d Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit {
		return nil, fmt.Errorf("blob %s is over %d MiB", d.Digest, limit>>20)
	}
	var b []byte
	err := c.blob(ctx, ref, d, func(r io.Reader) error {
		var err error
		b, err = io.ReadAll(io.LimitReader(r, limit+1))
		return err
	})
	return b, err
}

// blobToFile downloads a blob to path; a blob that does not match its digest or size leaves
// no file behind.
func (c *Client) blobToFile(ctx context.Context, ref Reference, d Descriptor, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	err := c.blob(ctx, ref, d, func(r io.Reader) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
		return err
	})
	if err != nil {
		_ = os.Remove(path) // the transfer's error is the one to tell
	}
	return err
}

// blob streams a blob through save, checking its size and digest at the end; a transfer cut
// short is tried again after a pause.
func (c *Client) blob(ctx context.Context, ref Reference, d Descriptor, save func(io.Reader) error) error {
	if !strings.HasPrefix(d.Digest, "sha256:") {
		return fmt.Errorf("blob %q: aa-grade checks sha256 digests only", d.Digest)
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.get(ctx, ref, "/blobs/"+d.Digest, "")
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return c.statusError(ref, resp, "blob "+d.Digest)
		}
		h := &hashingReader{r: resp.Body, h: sha256.New()}
		err = save(h)
		resp.Body.Close()
		if err != nil && h.err == nil {
			return err // not the transfer: writing it here failed
		}
		if err != nil && ctx.Err() == nil && attempt < c.attempts() {
			// The connection broke: again, from the start, after the pause a busy registry needs.
			if err := backoff.Sleep(ctx, c.Retry.Delay(attempt, 0)); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return unavailableError{fmt.Errorf("download: %w", err)}
		}
		if got := "sha256:" + hex.EncodeToString(h.h.Sum(nil)); got != d.Digest || d.Size > 0 && h.n != d.Size {
			return fmt.Errorf(
				"the blob from %s does not match its digest (%d bytes hashing to %s, not %d bytes hashing to %s): the registry "+
					"serves a damaged or altered image", ref.Registry, h.n, got, d.Size, d.Digest)
		}
		return nil
	}
}

type hashingReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error // the read's failure, other than its end
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && err != io.EOF {
		h.err = err
	}
	return n, err
}

// get sends a GET to the repository's API, meeting the registry's authentication challenge
// once.
func (c *Client) get(ctx context.Context, ref Reference, path, accept string) (*http.Response, error) {
	scheme := "https"
	if c.plainHTTP(ref.Registry) {
		scheme = "http"
	}
	url := scheme + "://" + ref.apiHost() + "/v2/" + ref.Repository + path
	key := ref.Registry + "/" + ref.Repository
	for challenged := false; ; challenged = true {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		c.mu.Lock()
		authorization := c.auth[key]
		c.mu.Unlock()
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := c.send(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized || challenged {
			return resp, nil
		}
		header := resp.Header.Get("WWW-Authenticate")
		resp.Body.Close()
		authorization, err = c.authorize(ctx, ref, header)
		if errors.Is(err, errUnauthorized) {
			return nil, c.unauthorized(ref, err)
		}
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.auth == nil {
			c.auth = map[string]string{}
		}
		c.auth[key] = authorization
		c.mu.Unlock()
	}
}

// send makes one call, tried again (after a pause) while the registry answers 429 or 5xx or
// drops the connection before answering.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.HTTP.Do(req)
		if err != nil && dropped(err) && attempt < c.attempts() && req.Context().Err() == nil {
			if err := backoff.Sleep(req.Context(), c.Retry.Delay(attempt, 0)); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			if req.Context().Err() != nil {
				return nil, req.Context().Err()
			}
			return nil, unavailableError{
				fmt.Errorf("registry %s unreachable: %w (check the host and port; a registry without TLS must be listed in %s)",
					req.URL.Host, errors.Unwrap(err), insecureRegistriesVar)}
		}
		if !retryable(resp.StatusCode) {
			return resp, nil
		}
		if attempt >= c.attempts() {
			defer resp.Body.Close()
			return nil, unavailableError{fmt.Errorf("%s answers %s still after %d tries: %s (try again later)",
				req.URL.Host, resp.Status, attempt, registryMessage(resp))}
		}
		wait := c.Retry.Delay(attempt, backoff.RetryAfter(resp.Header.Get("Retry-After")))
		resp.Body.Close()
		if err := backoff.Sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// dropped is a connection the registry (or a proxy) closed before answering: worth another
// try, unlike one that cannot be opened or a TLS handshake that fails.
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 && status != http.StatusNotImplemented
}

func (c *Client) attempts() int { return max(c.Attempts, 1) }

// statusError says what a refusal means to the user: no such image, or no access.
func (c *Client) statusError(ref Reference, resp *http.Response, what string) error {
	msg := registryMessage(resp)
	switch resp.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("%s has no such image (%s %s): check the repository and the tag or digest", ref.Registry, what, msg)
	case http.StatusUnauthorized, http.StatusForbidden:
		return c.unauthorized(ref, errors.New(msg))
	}
	return fmt.Errorf("%s %s: %s", what, resp.Status, msg)
}

func (c *Client) unauthorized(ref Reference, err error) error {
	if _, ok := c.credentials(ref.Registry); ok {
		return fmt.Errorf(
			"%s refuses the credentials of Docker's config.json for this image (%v): log in again with docker login %s, or "+
				"check the name", ref.Registry, err, ref.Registry)
	}
	return fmt.Errorf(
		"%s refuses anonymous access to this image (%v): log in with docker login %s (aa-grade reads the auths of "+
			"~/.docker/config.json), or check the name", ref.Registry, err, ref.Registry)
}

// registryMessage is the message of a registry's error answer ({"errors":[{"code","message"}]}),
// else its status.
func registryMessage(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Errors []struct{ Code, Message string }
	}
	var parts []string
	if json.Unmarshal(b, &body) == nil {
		for _, e := range body.Errors {
			parts = append(parts, strings.TrimSpace(strings.ToLower(e.Code)+": "+e.Message))
		}
	}
	if len(parts) == 0 {
		return resp.Status
	}
	return strings.Join(parts, "; ")
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blobPath is where a layout keeps a blob: blobs/<algorithm>/<hex>.
func blobPath(dir, digest string) string {
	algorithm, hexDigest, _ := strings.Cut(digest, ":")
	return filepath.Join(dir, "blobs", algorithm, filepath.Base(hexDigest))
}
