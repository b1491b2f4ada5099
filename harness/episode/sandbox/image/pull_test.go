package image

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakeregistry"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// pushTestImage stores the test layers (the upper one gzipped) as name:1 with config.
func pushTestImage(t *testing.T, reg *fakeregistry.Registry, name string, config []byte) fakeregistry.Descriptor {
	ls := layers(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ls[1])
	zw.Close()
	return reg.PushImage(name, "1", registry.MediaDockerManifest, fakeregistry.Image{Config: config, Layers: []fakeregistry.Descriptor{
		reg.PutBlob("application/vnd.docker.image.rootfs.diff.tar", ls[0]),
		reg.PutBlob("application/vnd.docker.image.rootfs.diff.tar.gzip", gz.Bytes()),
	}})
}

func testClient() *registry.Client {
	c := registry.New()
	c.Credentials = nil
	c.Retry = backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}
	return c
}

// wantPulledAgain stops the test unless a pull of an image unpacked already gave its root,
// got, having made requests of the registry (made).
func wantPulledAgain(t *testing.T, what, got string, err error, root string, made, requests int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got != root {
		t.Errorf("%s: root %s, want %s", what, got, root)
	}
	if made != requests {
		t.Errorf("%s: %d requests, want %d", what, made, requests)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestPullUnpacksOnceAndNeverAgain: a pulled image is unpacked like a saved one; the second
// use of its reference needs no network, and another reference to an image unpacked already
// fetches no layer.
func TestPullUnpacksOnceAndNeverAgain(t *testing.T) {
	reg := fakeregistry.New(t)
	manifest := pushTestImage(t, reg, "aa/sandbox", config(t))
	cache := t.TempDir()
	ref, _ := registry.ParseReference(reg.Host + "/aa/sandbox:1")
	root, digest, err := Pull(context.Background(), testClient(), ref, cache)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/os-release")); string(b) != "ID=upper\n" || digest != "sha256:"+strings.TrimPrefix(filepath.Base(root), "sha256-") {
		t.Fatalf("root %s (digest %s): os-release %q", root, digest, b)
	}
	served := reg.Requests()
	again, _, err := Pull(context.Background(), testClient(), ref, cache)
	wantPulledAgain(t, "second pull", again, err, root, reg.Requests()-served, 0)
	byDigest, _ := registry.ParseReference(reg.Host + "/aa/sandbox@" + manifest.Digest)
	again, _, err = Pull(context.Background(), testClient(), byDigest, cache)
	wantPulledAgain(t, "by digest (the manifest and the config only)", again, err, root, reg.Requests()-served, 2)
	if entries, _ := filepath.Glob(filepath.Join(cache, ".*")); len(entries) > 0 {
		t.Errorf("left in the cache: %v", entries)
	}
}

// TestPullFailureLeavesNothing: an image for another machine is refused before its layers
// are fetched; a damaged layer leaves nothing in the cache.
func TestPullFailureLeavesNothing(t *testing.T) {
	reg := fakeregistry.New(t)
	other, _ := json.Marshal(map[string]string{"os": "linux", "architecture": "s390x"})
	if runtime.GOARCH == "s390x" {
		other, _ = json.Marshal(map[string]string{"os": "linux", "architecture": "amd64"})
	}
	pushTestImage(t, reg, "aa/other", other)
	pushTestImage(t, reg, "aa/damaged", config(t))
	for name, want := range map[string]string{"aa/other": "the image is for linux/", "aa/damaged": "does not match its digest"} {
		if name == "aa/damaged" {
			reg.Fail(digest(layers(t)[0]), fakeregistry.Fault{Corrupt: true})
		}
		cache := t.TempDir()
		ref, _ := registry.ParseReference(reg.Host + "/" + name + ":1")
		before := reg.Requests()
		_, _, err := Pull(context.Background(), testClient(), ref, cache)
		if err == nil {
			t.Fatalf("%s: no error, want %q", name, want)
		}
		if prefix := "image " + ref.String() + ": "; !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: err = %v, want it to start %q", name, err, prefix)
		}
		if !textcheck.Has(t, name+": the error", err.Error(), want) || t.Failed() {
			t.FailNow()
		}
		if name == "aa/other" && reg.Requests()-before != 2 {
			t.Errorf("%s: %d requests, want the manifest and the config only", name, reg.Requests()-before)
		}
		if entries, _ := os.ReadDir(cache); len(entries) > 0 {
			t.Errorf("%s: left in the cache: %v", name, entries)
		}
	}
}
