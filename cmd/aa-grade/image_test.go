//go:build linux

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/sandbox"
	"github.com/aa-grade/aa-grade/harness/sandbox/image/registry"
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
			if r.code != c.code || !strings.HasPrefix(r.stderr, "aa-grade: --sandbox-image: image "+c.ref+": ") || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, want %d and one line with %q\n%s", r.code, c.code, c.want, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a half-started run folder was left")
			}
			if left, _ := os.ReadDir(filepath.Join(cache, "aa-grade", "rootfs")); len(left) > 0 {
				t.Errorf("left in the image cache: %v", left)
			}
		})
	}
}
