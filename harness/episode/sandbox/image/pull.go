package image

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
)

// refsDir keeps, per registry reference, the config digest it was pulled as: the next use
// of the reference is unpacked already and needs no network (as a tag a daemon has pulled).
const refsDir = "refs"

// Pull makes the root file system of the registry image ref under cacheDir and returns its
// folder and config digest. A reference pulled before is not fetched again; an image whose
// root an earlier pull or unpack made under another name has only its manifest and config
// fetched. Whatever fails leaves nothing behind in cacheDir.
func Pull(ctx context.Context, c *registry.Client, ref registry.Reference, cacheDir string) (string, string, error) {
	record := filepath.Join(cacheDir, refsDir, url.QueryEscape(ref.String()))
	if b, err := os.ReadFile(record); err == nil {
		digest := strings.TrimSpace(string(b))
		if root, ok := Cached(cacheDir, digest); ok {
			return root, digest, nil
		}
	}
	tmp, err := os.MkdirTemp(cacheDir, ".pull-")
	if err != nil {
		return "", "", fmt.Errorf("image %s: %w", ref, err)
	}
	// The pulled blobs, unpacked or abandoned; else a hidden folder of the cache, never used.
	defer func() { _ = os.RemoveAll(tmp) }()
	digest, err := c.Pull(ctx, ref, tmp, func(digest string, config []byte) (bool, error) {
		if err := checkPlatform(config); err != nil {
			return false, err
		}
		_, ok := Cached(cacheDir, digest)
		return ok, nil
	})
	if err != nil {
		return "", "", fmt.Errorf("image %s: %w", ref, err)
	}
	root, ok := Cached(cacheDir, digest)
	if !ok {
		if root, err = unpackLayout(dirFiles(tmp), cacheDir); err != nil {
			return "", "", fmt.Errorf("image %s: %w", ref, err)
		}
	}
	if err := atomicfile.WriteFile(record, []byte(digest+"\n")); err != nil {
		return "", "", fmt.Errorf("image %s: %w", ref, err)
	}
	return root, digest, nil
}
