// Package image turns a container image into a root file system a sandbox can show read-only
// as `/`, without a container daemon: from a `docker save` tarball (the legacy layout with
// manifest.json, or the OCI layout Docker 25 and later write) or an OCI image layout folder.
// The layers are applied in order, whiteouts included, once per image into a cache folder
// named after the image's config digest.
package image

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// MountPoints are the folders and files a sandbox mounts over; an image that lacks them gets
// them, empty, so that a read-only root needs no folder made at start.
var MountPoints = struct{ Dirs, Files []string }{
	Dirs:  []string{"proc", "dev", "tmp", "run/aa-grade", "home/user"},
	Files: []string{"run/aa-grade/agent"},
}

// completeMark is written last into an unpacked root: a folder without it is unfinished.
const completeMark = ".aa-grade-rootfs"

// Unpack makes the root file system of the image at src (a `docker save` tarball or an OCI
// layout folder) under cacheDir, unless it is there already, and returns its folder. A
// tarball is read in place: its entries are listed (their contents skipped), manifest.json
// or index.json and the config read, and only when the cache lacks the image's root are its
// layers read, straight out of the tarball.
func Unpack(src, cacheDir string) (string, error) {
	info, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", src, err)
	}
	var files layoutFiles = dirFiles(src)
	if !info.IsDir() {
		saved, err := openSaved(src)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", src, err)
		}
		defer func() { _ = saved.Close() }() // read only
		files = saved
	}
	root, err := unpackLayout(files, cacheDir)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", src, err)
	}
	return root, nil
}

// unpackLayout makes the root file system of the image in an OCI or docker save layout under
// cacheDir, in a folder named after its config digest, unless it is there already.
func unpackLayout(files layoutFiles, cacheDir string) (string, error) {
	configDigest, layers, err := readLayout(files)
	if err != nil {
		return "", err
	}
	if root, ok := Cached(cacheDir, configDigest); ok {
		return root, nil
	}
	root := rootOf(cacheDir, configDigest)
	partial, err := os.MkdirTemp(cacheDir, ".rootfs-")
	if err != nil {
		return "", err
	}
	// Gone once renamed; else what stays is a hidden folder of the cache, never taken for a root.
	defer func() { _ = os.RemoveAll(partial) }()
	if err := os.Chmod(partial, 0o755); err != nil {
		return "", err
	}
	for _, l := range layers {
		if err := applyLayer(partial, files, l); err != nil {
			return "", fmt.Errorf("layer %s: %w", path.Base(l.name), err)
		}
	}
	if err := addMountPoints(partial); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(partial, completeMark), []byte(configDigest+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.RemoveAll(root); err != nil { // an unfinished earlier attempt
		return "", err
	}
	if err := os.Rename(partial, root); err != nil {
		return "", err
	}
	return root, nil
}

// Cached is the root file system of the image with this config digest, if an earlier unpack
// finished it under cacheDir.
func Cached(cacheDir, configDigest string) (string, bool) {
	root := rootOf(cacheDir, configDigest)
	_, err := os.Stat(filepath.Join(root, completeMark))
	return root, err == nil
}

// Discard removes a root file system Unpack or Pull made under cacheDir, and the records of
// the references pulled as it: an image found unable to run leaves nothing in the cache. Best
// effort: what stays is an image that is found unable to run again, the next time it is used.
func Discard(cacheDir, root string) {
	if filepath.Dir(root) != filepath.Clean(cacheDir) {
		return
	}
	records, _ := os.ReadDir(filepath.Join(cacheDir, refsDir))
	for _, r := range records {
		record := filepath.Join(cacheDir, refsDir, r.Name())
		if b, err := os.ReadFile(record); err == nil && rootOf(cacheDir, strings.TrimSpace(string(b))) == root {
			_ = os.Remove(record)
		}
	}
	_ = os.Remove(filepath.Join(cacheDir, refsDir)) // fails unless it is empty
	_ = os.RemoveAll(root)
}

func rootOf(cacheDir, configDigest string) string {
	return filepath.Join(cacheDir, strings.ReplaceAll(configDigest, ":", "-"))
}

// layoutFiles are the files of an image layout, by their slash-separated names in it.
type layoutFiles interface {
	open(name string) (io.ReadSeekCloser, error)
}

// dirFiles is a layout folder.
type dirFiles string

func (d dirFiles) open(name string) (io.ReadSeekCloser, error) {
	return os.Open(filepath.Join(string(d), filepath.FromSlash(name)))
}

// savedTarball is the layout inside a `docker save` tarball, read in place.
type savedTarball struct {
	f       *os.File
	entries map[string]tarEntry
}

// tarEntry is where a regular file's contents are in the tarball, or what a link leads to (a
// name of the tarball).
type tarEntry struct {
	offset, size int64
	link         string
}

// openSaved lists the entries of a `docker save` tarball: their headers only, the tar
// reader seeking over their contents.
func openSaved(tarball string) (*savedTarball, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	t := &savedTarball{f: f, entries: map[string]tarEntry{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			_ = f.Close() // read only
			return nil, fmt.Errorf("not a docker save tarball: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		switch h.Typeflag {
		case tar.TypeReg:
			if sparse(h) {
				continue // its bytes are not where they are read from; docker save writes none
			}
			// The tar reader reads no further than the header: the contents start here.
			offset, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				_ = f.Close() // read only
				return nil, err
			}
			t.entries[name] = tarEntry{offset: offset, size: h.Size}
		case tar.TypeSymlink: // legacy saves link identical layers
			target := path.Join(path.Dir(name), h.Linkname)
			if path.IsAbs(h.Linkname) {
				target = path.Clean(strings.TrimPrefix(h.Linkname, "/"))
			}
			t.entries[name] = tarEntry{link: target}
		case tar.TypeLink:
			t.entries[name] = tarEntry{link: path.Clean(strings.TrimPrefix(h.Linkname, "/"))}
		}
	}
}

// sparse says whether a regular file is stored sparse (GNU's PAX form).
func sparse(h *tar.Header) bool {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

func (t *savedTarball) open(name string) (io.ReadSeekCloser, error) {
	name = path.Clean(name)
	for range 16 {
		e, ok := t.entries[name]
		if !ok {
			return nil, fmt.Errorf("%s: %w in the tarball", name, fs.ErrNotExist)
		}
		if e.link == "" {
			return nopCloser{io.NewSectionReader(t.f, e.offset, e.size)}, nil
		}
		name = e.link
	}
	return nil, fmt.Errorf("%s: too many links in the tarball", name)
}

func (t *savedTarball) Close() error { return t.f.Close() }

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// readFile reads a small file of a layout: a manifest, an index, a config.
func readFile(files layoutFiles, name string) ([]byte, error) {
	f, err := files.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetadata+1))
	if err == nil && len(b) > maxMetadata {
		err = fmt.Errorf("%s: more than %d bytes", name, maxMetadata)
	}
	return b, err
}

// maxMetadata bounds a manifest, an index or a config.
const maxMetadata = 16 << 20

// layer is one layer file of a layout, with how it is compressed.
type layer struct {
	name      string
	mediaType string
}

// readLayout finds the image's config digest and its layers, bottom first, in a legacy
// (manifest.json) or OCI (index.json) layout, for this machine's architecture.
func readLayout(files layoutFiles) (string, []layer, error) {
	if b, err := readFile(files, "manifest.json"); err == nil {
		var manifests []struct {
			Config string
			Layers []string
		}
		if err := json.Unmarshal(b, &manifests); err != nil || len(manifests) == 0 {
			return "", nil, fmt.Errorf("manifest.json: not a docker save manifest")
		}
		m := manifests[0]
		config, err := readFile(files, m.Config)
		if err != nil {
			return "", nil, err
		}
		if err := checkPlatform(config); err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(config)
		var layers []layer
		for _, l := range m.Layers {
			layers = append(layers, layer{name: l})
		}
		return "sha256:" + hex.EncodeToString(sum[:]), layers, nil
	}
	index, err := readFile(files, "index.json")
	if err != nil {
		return "", nil, errors.New("neither a docker save tarball nor an OCI image layout (no manifest.json, no index.json)")
	}
	manifest, err := resolveManifest(files, index)
	if err != nil {
		return "", nil, err
	}
	var m struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return "", nil, fmt.Errorf("manifest: %w", err)
	}
	config, err := readFile(files, blobName(m.Config.Digest))
	if err != nil {
		return "", nil, err
	}
	if err := checkPlatform(config); err != nil {
		return "", nil, err
	}
	var layers []layer
	for _, l := range m.Layers {
		layers = append(layers, layer{name: blobName(l.Digest), mediaType: l.MediaType})
	}
	return m.Config.Digest, layers, nil
}

type descriptor struct {
	MediaType string
	Digest    string
	Platform  *struct{ Architecture, OS string }
}

// resolveManifest follows an index (maybe nested) to the image manifest for this machine.
func resolveManifest(files layoutFiles, index []byte) ([]byte, error) {
	for depth := 0; depth < 4; depth++ {
		var idx struct {
			MediaType string
			Manifests []descriptor
			Config    *descriptor
		}
		if err := json.Unmarshal(index, &idx); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		if idx.Config != nil {
			return index, nil // an image manifest
		}
		var chosen *descriptor
		for i, d := range idx.Manifests {
			if d.Platform == nil || (d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH) {
				chosen = &idx.Manifests[i]
				break
			}
		}
		if chosen == nil {
			return nil, fmt.Errorf("no manifest for linux/%s", runtime.GOARCH)
		}
		b, err := readFile(files, blobName(chosen.Digest))
		if err != nil {
			return nil, err
		}
		index = b
	}
	return nil, errors.New("indexes nested too deep")
}

// blobName is where a layout keeps a blob: blobs/<algorithm>/<hex>.
func blobName(digest string) string {
	algorithm, hexDigest, _ := strings.Cut(digest, ":")
	return path.Join("blobs", path.Base(algorithm), path.Base(hexDigest))
}

// checkPlatform refuses an image for another operating system or architecture.
func checkPlatform(config []byte) error {
	var c struct{ Architecture, OS string }
	if err := json.Unmarshal(config, &c); err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	if c.OS != "" && c.OS != "linux" || c.Architecture != "" && c.Architecture != runtime.GOARCH {
		return fmt.Errorf("the image is for %s/%s, not linux/%s", c.OS, c.Architecture, runtime.GOARCH)
	}
	return nil
}

// applyLayer unpacks one layer over root: entries are created inside root only (os.Root),
// whiteouts remove what lower layers put there, devices and FIFOs are left out (a sandbox
// mounts its own /dev).
func applyLayer(dir string, files layoutFiles, l layer) error {
	f, err := files.open(l.name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	r, err := decompress(f, l.mediaType)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // a decompressor of what is read
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a folder handle: the files written through it are closed
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}
		base, parent := path.Base(name), path.Dir(name)
		if base == ".wh..wh..opq" { // the folder's lower contents are hidden
			if err := emptyDir(root, parent); err != nil {
				return err
			}
			continue
		}
		if hidden, ok := strings.CutPrefix(base, ".wh."); ok {
			if err := root.RemoveAll(path.Join(parent, hidden)); err != nil {
				return err
			}
			continue
		}
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeDir {
			if err := root.RemoveAll(name); err != nil { // an upper layer replaces
				return err
			}
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
			if err := root.Chmod(name, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(root, name, tr, mode|0o600); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := root.Link(path.Clean(strings.TrimPrefix(h.Linkname, "/")), name); err != nil {
				return err
			}
		}
	}
}

func writeFile(root *os.Root, name string, r io.Reader, mode fs.FileMode) error {
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		_ = out.Close() // the copy's error is the one to tell, and the unpacking is abandoned
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return root.Chmod(name, mode)
}

func emptyDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close() // read only
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := root.RemoveAll(path.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// decompress opens a layer by its media type, or by its first bytes when it has none (legacy
// saves hold plain tar).
func decompress(f io.ReadSeeker, mediaType string) (io.ReadCloser, error) {
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	switch {
	case strings.HasSuffix(mediaType, "gzip") || n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return gzip.NewReader(f)
	case strings.HasSuffix(mediaType, "zstd") || n == 4 && string(magic) == "\x28\xb5\x2f\xfd":
		d, err := zstd.NewReader(f)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(f), nil
}

// addMountPoints makes the folders and files a sandbox mounts over.
func addMountPoints(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a folder handle: root.WriteFile checks its own close
	for _, d := range MountPoints.Dirs {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, f := range MountPoints.Files {
		if _, err := root.Lstat(f); errors.Is(err, fs.ErrNotExist) {
			if err := root.WriteFile(f, nil, 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}
