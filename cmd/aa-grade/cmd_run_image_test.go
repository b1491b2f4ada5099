//go:build linux

package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakeregistry"
)

// TestRegistryImageBadInputIsOneClearLine: a registry reference that cannot be pulled is one
// line naming the fix, exit 3 when the registry cannot be reached and 2 when it refuses the
// reference, with no run folder and nothing in the image cache.
func TestRegistryImageBadInputIsOneClearLine(t *testing.T) {
	if _, err := sandbox.Select(sandbox.NameBwrap); err != nil {
		t.Skip(err)
	}
	reg := fakeregistry.New(t)
	reg.PushIndex("aa/arm", "1", registry.MediaOCIIndex, []fakeregistry.Descriptor{{MediaType: registry.MediaOCIManifest,
		Digest: "sha256:" + strings.Repeat("0", 64), Platform: map[string]string{"os": "linux", "architecture": "mips64le"}}})
	private := fakeregistry.New(t)
	private.SetAuth("t", "u", "p")
	for name, c := range map[string]struct {
		ref  string
		code int
		want string
	}{
		"unreachable":  {"127.0.0.1:1/aa/sandbox:1", 3, "registry 127.0.0.1:1 unreachable: dial tcp 127.0.0.1:1: connect: connection refused"},
		"unknown tag":  {reg.Host + "/aa/sandbox:9", 2, "has no such image (manifest manifest_unknown: manifest unknown): check the repository and the tag or digest"},
		"unauthorized": {private.Host + "/aa/sandbox:1", 2, "refuses anonymous access to this image (unauthorized): log in with docker login " + private.Host},
		"another arch": {reg.Host + "/aa/arm:1", 2, "the image has no linux/" + runtime.GOARCH + " build (it has linux/mips64le): pick or push an image for this machine"},
	} {
		t.Run(name, func(t *testing.T) {
			out, cache := filepath.Join(t.TempDir(), "run"), t.TempDir()
			r := aaGrade(t, []string{"XDG_CACHE_HOME=" + cache, "DOCKER_CONFIG=" + t.TempDir()},
				"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901", "--repeats", "1",
				"--sandbox", "bwrap", "--sandbox-image", c.ref, "--out", out)
			r.wantErrorLineWith(t, c.code, "aa-grade: --sandbox-image: image "+c.ref+": ", c.want)
			if _, err := os.Stat(out); err == nil {
				t.Error("a half-started run folder was left")
			}
			if left, _ := os.ReadDir(filepath.Join(cache, "aa-grade", "rootfs")); len(left) > 0 {
				t.Errorf("left in the image cache: %v", left)
			}
		})
	}
}

// savedImage is a `docker save` tarball (the legacy layout) of an image for linux/arch named
// name, of one layer holding files (name -> contents): without bash unless files has one.
func savedImage(t *testing.T, name, arch string, files map[string]string) []byte {
	t.Helper()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	for n, body := range files {
		lw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg})
		lw.Write([]byte(body))
	}
	lw.Close()
	config := fmt.Sprintf(`{"architecture":%q,"os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%x"]},"config":{}}`,
		arch, sha256.Sum256(layer.Bytes()))
	manifest := fmt.Sprintf(`[{"Config":"config.json","RepoTags":[%q],"Layers":["layer/layer.tar"]}]`, name)
	var saved bytes.Buffer
	tw := tar.NewWriter(&saved)
	for _, f := range []struct {
		name string
		body []byte
	}{{"layer/layer.tar", layer.Bytes()}, {"config.json", []byte(config)}, {"manifest.json", []byte(manifest)}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write(f.body)
	}
	tw.Close()
	return saved.Bytes()
}

// otherArch is a machine that is not this one.
func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// TestBwrapImageBadInputIsOneClearLine: over bwrap, an image without bash, like one for
// another machine or a tarball that is not there, is one line naming the fix, exit 2 (the
// image named is unusable), before the run says anything, with no run folder and nothing
// left in the image cache.
func TestBwrapImageBadInputIsOneClearLine(t *testing.T) {
	if _, err := sandbox.Select(sandbox.NameBwrap); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	noBash, arm := filepath.Join(dir, "no-bash.tar"), filepath.Join(dir, "other-arch.tar")
	os.WriteFile(noBash, savedImage(t, "no-bash:1", runtime.GOARCH, map[string]string{"etc/hello": "hi\n"}), 0o644)
	os.WriteFile(arm, savedImage(t, "other:1", otherArch(), nil), 0o644)
	for name, c := range map[string]struct{ image, want string }{
		"no bash": {noBash, "image " + noBash + " cannot run an episode (it needs bash and a linux/" + runtime.GOARCH + " kernel): " +
			`exec: "bash": executable file not found in $PATH; use an image with bash`},
		"another arch": {arm, "the image is for linux/" + otherArch() + ", not linux/" + runtime.GOARCH},
		"no tarball":   {filepath.Join(dir, "absent.tar"), "from a daemon: docker save IMAGE -o image.tar"},
	} {
		t.Run(name, func(t *testing.T) {
			out, cache := filepath.Join(t.TempDir(), "run"), t.TempDir()
			r := aaGrade(t, []string{"XDG_CACHE_HOME=" + cache}, "run", "--dataset", "demo", "--model", "builtin/baseline",
				"--tasks", "901", "--repeats", "1", "--sandbox", "bwrap", "--sandbox-image", c.image, "--out", out)
			r.wantErrorLineWith(t, 2, "aa-grade: --sandbox-image: ", c.want)
			if _, err := os.Stat(out); err == nil {
				t.Error("a half-started run folder was left")
			}
			if left, _ := os.ReadDir(filepath.Join(cache, "aa-grade", "rootfs")); len(left) > 0 {
				t.Errorf("left in the image cache: %v", left)
			}
		})
	}
}
