package registry

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakeregistry"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// fixture is a registry holding aa/sandbox:1, an index of an s390x image and one for this
// machine, and its pieces.
type fixture struct {
	reg              *fakeregistry.Registry
	index, manifest  fakeregistry.Descriptor
	config, layerOne fakeregistry.Descriptor
}

func newFixture(t *testing.T, indexType, manifestType string) fixture {
	reg := fakeregistry.New(t)
	f := fixture{reg: reg}
	f.layerOne = reg.PutBlob("application/vnd.oci.image.layer.v1.tar+gzip", []byte("layer one, as if gzipped"))
	layerTwo := reg.PutBlob("application/vnd.oci.image.layer.v1.tar", []byte("layer two"))
	config, _ := json.Marshal(map[string]string{"os": "linux", "architecture": runtime.GOARCH})
	f.manifest = reg.PushImage("aa/sandbox", "", manifestType, fakeregistry.Image{Config: config, Layers: []fakeregistry.Descriptor{f.layerOne, layerTwo}})
	f.manifest.Platform = map[string]string{"os": "linux", "architecture": runtime.GOARCH}
	other := reg.PushImage("aa/sandbox", "", manifestType, fakeregistry.Image{Config: []byte(`{"os":"linux","architecture":"s390x"}`)})
	other.Platform = map[string]string{"os": "linux", "architecture": "s390x"}
	f.index = reg.PushIndex("aa/sandbox", "1", indexType, []fakeregistry.Descriptor{other, f.manifest})
	f.config = fakeregistry.Descriptor{Digest: digestOf(config)}
	return f
}

// testClient speaks to the fake registry at once: no waits between retries, no credentials.
func testClient() *Client {
	c := New()
	c.Credentials = nil
	c.Retry = backoff.Policy{Base: time.Millisecond, Max: time.Millisecond, MaxRetryAfter: time.Millisecond}
	return c
}

func ref(t *testing.T, s string) Reference {
	r, err := ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pull(c *Client, r Reference, dir string) (string, error) {
	return c.Pull(context.Background(), r, dir, func(string, []byte) (bool, error) { return false, nil })
}

// TestPullWritesALayoutOfThisMachinesImage: by tag and by digest, through an OCI index and a
// Docker manifest list, behind an anonymous token: the layout holds this machine's manifest,
// its config and its layers, and no other platform's.
func TestPullWritesALayoutOfThisMachinesImage(t *testing.T) {
	for _, kind := range [][2]string{{MediaOCIIndex, MediaOCIManifest}, {MediaDockerList, MediaDockerManifest}} {
		f := newFixture(t, kind[0], kind[1])
		f.reg.SetAuth("anonymous-token", "", "")
		for _, name := range []string{f.reg.Host + "/aa/sandbox:1", f.reg.Host + "/aa/sandbox@" + f.index.Digest} {
			dir := t.TempDir()
			digest, err := pull(testClient(), ref(t, name), dir)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if digest != f.config.Digest {
				t.Errorf("%s: config digest %s, want %s", name, digest, f.config.Digest)
			}
			var index struct{ Manifests []Descriptor }
			b, _ := os.ReadFile(filepath.Join(dir, "index.json"))
			if json.Unmarshal(b, &index); len(index.Manifests) != 1 {
				t.Errorf("%s: index.json %s, want the manifest %s alone", name, b, f.manifest.Digest)
			} else if got, want := [2]string{index.Manifests[0].Digest, index.Manifests[0].MediaType}, [2]string{f.manifest.Digest, kind[1]}; got != want {
				t.Errorf("%s: index.json names the manifest %q, want %q", name, got, want)
			}
			for _, d := range []string{f.manifest.Digest, f.config.Digest, f.layerOne.Digest} {
				if _, err := os.Stat(blobPath(dir, d)); err != nil {
					t.Errorf("%s: blob %s: %v", name, d, err)
				}
			}
		}
	}
}

// TestPullWithDockerConfigCredentials: a registry that gives tokens to a user only is pulled
// from with the auths entry of Docker's config.json, and refused in one line without it.
func TestPullWithDockerConfigCredentials(t *testing.T) {
	f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
	f.reg.SetAuth("user-token", "grader", "s3cret")
	r := ref(t, f.reg.Host+"/aa/sandbox:1")

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c := testClient()
	c.Credentials = DockerConfigCredentials
	_, err := pull(c, r, t.TempDir())
	if err == nil {
		t.Fatal("without credentials: no error")
	}
	if !textcheck.Has(t, "the error without credentials", err.Error(), "refuses anonymous access to this image", "docker login "+f.reg.Host) {
		t.FailNow()
	}

	config, _ := json.Marshal(map[string]any{"auths": map[string]any{"http://" + f.reg.Host: map[string]string{"auth": fakeregistry.BasicAuth("grader", "s3cret")}}})
	os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), config, 0o600)
	if _, err := pull(c, r, t.TempDir()); err != nil {
		t.Fatalf("with credentials: %v", err)
	}

	config, _ = json.Marshal(map[string]any{"auths": map[string]any{f.reg.Host: map[string]string{"username": "grader", "password": "wrong"}}})
	os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), config, 0o600)
	c = testClient() // no token from before
	c.Credentials = DockerConfigCredentials
	if _, err := pull(c, r, t.TempDir()); err == nil || !strings.Contains(err.Error(), "refuses the credentials of Docker's config.json") {
		t.Fatalf("with wrong credentials: %v", err)
	}
}

// TestPullRefusesWhatCannotBePulled: each failure is one line that says what to do, and
// leaves no blob behind.
func TestPullRefusesWhatCannotBePulled(t *testing.T) {
	for _, c := range []struct {
		name, ref string
		fault     *fakeregistry.Fault // on the first layer, every time
		want      string
	}{
		{"unknown tag", "/aa/sandbox:2", nil, "has no such image (manifest manifest_unknown: manifest unknown): check the repository and the tag or digest"},
		{"unknown repository", "/aa/nothing:1", nil, "has no such image"},
		{"no build for this machine", "/aa/other:1", nil, "the image has no linux/" + runtime.GOARCH + " build (it has linux/riscv64): pick or push an image for this machine"},
		{"wrong digest blob", "/aa/sandbox:1", &fakeregistry.Fault{Corrupt: true}, "does not match its digest"},
		{"failing registry", "/aa/sandbox:1", &fakeregistry.Fault{Status: http.StatusServiceUnavailable}, "answers 503 Service Unavailable still after 4 tries: unavailable: the fake registry fails on purpose (try again later)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
			riscv := f.manifest
			riscv.Platform = map[string]string{"os": "linux", "architecture": "riscv64"}
			f.reg.PushIndex("aa/other", "1", MediaOCIIndex, []fakeregistry.Descriptor{riscv})
			if c.fault != nil {
				for range 4 {
					f.reg.Fail(f.layerOne.Digest, *c.fault)
				}
			}
			dir := t.TempDir()
			_, err := pull(testClient(), ref(t, f.reg.Host+c.ref), dir)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			textcheck.Has(t, "the error", err.Error(), c.want)
			if !textcheck.Lacks(t, "the error", err.Error(), "\n") || t.Failed() {
				t.FailNow()
			}
			if _, err := os.Stat(blobPath(dir, f.layerOne.Digest)); err == nil {
				t.Error("the failed layer was left behind")
			}
			if unavailable := c.name == "failing registry"; errors.Is(err, ErrUnavailable) != unavailable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v", !unavailable, unavailable)
			}
		})
	}
}

// TestPullTriesAgain: 429 (with Retry-After) and 5xx answers, a connection dropped before the
// answer and one cut mid-blob are tried again; the pull succeeds.
func TestPullTriesAgain(t *testing.T) {
	f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
	f.reg.Fail("/manifests/1", fakeregistry.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	f.reg.Fail("/manifests/1", fakeregistry.Fault{Status: http.StatusBadGateway})
	f.reg.Fail("/manifests/1", fakeregistry.Fault{Drop: true})
	f.reg.Fail(f.config.Digest, fakeregistry.Fault{Status: http.StatusInternalServerError})
	f.reg.Fail(f.layerOne.Digest, fakeregistry.Fault{Cut: true})
	f.reg.Fail(f.layerOne.Digest, fakeregistry.Fault{Status: http.StatusServiceUnavailable})
	before := f.reg.Requests()
	if _, err := pull(testClient(), ref(t, f.reg.Host+"/aa/sandbox:1"), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	// manifest 4, index's choice 1, config 2, layer one 3, layer two 1
	if n := f.reg.Requests() - before; n != 11 {
		t.Errorf("%d requests, want 11", n)
	}
}

// TestPullPausesBeforeTryingAgain: every try again of the same object, after a dropped
// connection and a cut transfer as after a 429 or 5xx, waits at least the policy's least
// delay (half its base): a busy registry is not hammered.
func TestPullPausesBeforeTryingAgain(t *testing.T) {
	f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
	f.reg.Fail("/manifests/1", fakeregistry.Fault{Drop: true})
	f.reg.Fail("/manifests/1", fakeregistry.Fault{Status: http.StatusBadGateway})
	f.reg.Fail(f.layerOne.Digest, fakeregistry.Fault{Cut: true})
	f.reg.Fail(f.layerOne.Digest, fakeregistry.Fault{Cut: true})
	c := testClient()
	const least = 20 * time.Millisecond
	c.Retry = backoff.Policy{Base: 2 * least, Max: 2 * least, MaxRetryAfter: 2 * least}
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	c.HTTP = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		starts[req.URL.Path] = append(starts[req.URL.Path], time.Now())
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(req)
	})}
	if _, err := pull(c, ref(t, f.reg.Host+"/aa/sandbox:1"), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	tried := 0
	for path, at := range starts {
		for i := 1; i < len(at); i++ {
			tried++
			if gap := at[i].Sub(at[i-1]); gap < least {
				t.Errorf("%s tried again after %v, want at least %v", path, gap, least)
			}
		}
	}
	if tried < 4 {
		t.Fatalf("%d tries again, want 4 (two of the manifest, two of the layer): %v", tried, starts)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUnreachableRegistry is an infrastructure failure naming the registry.
func TestUnreachableRegistry(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = pull(testClient(), ref(t, addr+"/aa/sandbox:1"), t.TempDir())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "registry "+addr+" unreachable") {
		t.Fatalf("err = %v", err)
	}
}

// TestHTTPSUnlessLocal: a registry elsewhere is spoken to over TLS (here: a plain-HTTP server
// behind its name fails the handshake); a loopback one or one listed in
// AA_GRADE_INSECURE_REGISTRIES over plain HTTP.
func TestHTTPSUnlessLocal(t *testing.T) {
	f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
	c := testClient()
	c.HTTP = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, f.reg.Host)
	}}}
	r := ref(t, "registry.example:5000/aa/sandbox:1")
	if _, err := pull(c, r, t.TempDir()); err == nil || !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		t.Fatalf("err = %v, want a TLS handshake with a plain-HTTP server", err)
	}
	t.Setenv(insecureRegistriesVar, "other.example,registry.example:5000")
	if _, err := pull(c, r, t.TempDir()); err != nil {
		t.Fatalf("listed in %s: %v", insecureRegistriesVar, err)
	}
	for host, want := range map[string]bool{"localhost:5000": true, "127.0.0.1:5000": true, "[::1]:5000": true, "registry.example": false, "10.0.0.1:5000": false} {
		if got := DefaultPlainHTTP(host); got != want {
			t.Errorf("DefaultPlainHTTP(%s) = %v", host, got)
		}
	}
}

func TestParseReference(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		"registry.example:5000/aa-grade/sandbox:2026.11": "registry.example:5000/aa-grade/sandbox:2026.11",
		"localhost/sandbox":         "localhost/sandbox:latest",
		"docker.io/debian:bookworm": "docker.io/library/debian:bookworm",
		"ghcr.io/a/b:1@" + d:        "ghcr.io/a/b@" + d,
		"127.0.0.1:5000/a@" + d:     "127.0.0.1:5000/a@" + d,
	} {
		r, err := ParseReference(in)
		if err != nil || r.String() != want {
			t.Errorf("%s: %v %v, want %s", in, r, err, want)
		}
	}
	for _, in := range []string{"debian:bookworm", "image.tar", "./image.tar", "registry.example/UPPER:1", "registry.example/a@sha256:12", "registry.example/a:bad/tag"} {
		if r, err := ParseReference(in); err == nil {
			t.Errorf("%s: %v, want an error", in, r)
		}
	}
}

func TestParseChallenge(t *testing.T) {
	c := parseChallenge(`Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"`)
	if c.scheme != "bearer" {
		t.Errorf("scheme %q, want bearer", c.scheme)
	}
	if want := map[string]string{"realm": "https://auth.example/token", "service": "registry.example", "scope": "repository:a/b:pull,push"}; !maps.Equal(c.params, want) {
		t.Errorf("params %q, want %q", c.params, want)
	}
}

// TestBlobWriteFailureIsNotTheRegistrys: a blob that cannot be written here (its path is a
// folder) fails at once, with the local error, not as a registry failing after retries.
func TestBlobWriteFailureIsNotTheRegistrys(t *testing.T) {
	f := newFixture(t, MediaOCIIndex, MediaOCIManifest)
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	before := f.reg.Requests()
	err := testClient().blobToFile(context.Background(), ref(t, f.reg.Host+"/aa/sandbox:1"), Descriptor{Digest: f.layerOne.Digest}, path)
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want a local failure", err)
	}
	if n := f.reg.Requests() - before; n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
