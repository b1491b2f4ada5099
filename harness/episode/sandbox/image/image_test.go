package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// entry is one file of a test layer.
type entry struct {
	name, body, link string
	flag             byte
}

func layerTar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.flag, Linkname: e.link, Size: int64(len(e.body))}
		if e.flag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.flag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// layers are two layers that exercise what an unpacker must get right: a whiteout, an opaque
// folder, a hard link, links, and entries that try to leave the root.
func layers(t *testing.T) [][]byte {
	lower := layerTar(t, []entry{
		{name: "etc/", flag: tar.TypeDir},
		{name: "etc/os-release", body: "ID=test\n", flag: tar.TypeReg},
		{name: "etc/removed", body: "gone", flag: tar.TypeReg},
		{name: "opt/", flag: tar.TypeDir},
		{name: "opt/old", body: "old", flag: tar.TypeReg},
		{name: "bin/", flag: tar.TypeDir},
		{name: "bin/tool", body: "#!/bin/sh\n", flag: tar.TypeReg},
		{name: "bin/alias", link: "bin/tool", flag: tar.TypeLink},
		{name: "bin/sh", link: "/bin/tool", flag: tar.TypeSymlink},
		{name: "../escape", body: "x", flag: tar.TypeReg},
		{name: "dev/null", flag: tar.TypeChar},
	})
	upper := layerTar(t, []entry{
		{name: "etc/.wh.removed", flag: tar.TypeReg},
		{name: "opt/.wh..wh..opq", flag: tar.TypeReg},
		{name: "opt/new", body: "new", flag: tar.TypeReg},
		{name: "etc/os-release", body: "ID=upper\n", flag: tar.TypeReg},
	})
	return [][]byte{lower, upper}
}

func config(t *testing.T) []byte {
	b, _ := json.Marshal(map[string]string{"architecture": runtime.GOARCH, "os": "linux"})
	return b
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ociLayout writes an OCI image layout folder (the upper layer gzipped) behind an index.
func ociLayout(t *testing.T) string {
	dir := t.TempDir()
	blob := func(b []byte) string {
		d := digest(b)
		p := filepath.Join(dir, "blobs", "sha256", d[len("sha256:"):])
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	ls := layers(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ls[1])
	zw.Close()
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config(t))},
		"layers": []any{
			map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": blob(ls[0])},
			map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": blob(gz.Bytes())},
		},
	})
	other, _ := json.Marshal(map[string]any{"schemaVersion": 2, "config": map[string]any{"digest": "sha256:00"}, "layers": []any{}})
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{
		map[string]any{"digest": blob(other), "platform": map[string]string{"os": "linux", "architecture": "s390x"}},
		map[string]any{"digest": blob(manifest), "platform": map[string]string{"os": "linux", "architecture": runtime.GOARCH}},
	}})
	os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644)
	os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	return dir
}

// legacySave writes a tarball in the layout `docker save` of Docker before 25 writes.
func legacySave(t *testing.T) string {
	ls := layers(t)
	cfg := config(t)
	manifest, _ := json.Marshal([]any{map[string]any{"Config": "cfg.json", "Layers": []string{"a/layer.tar", "b/layer.tar"}}})
	saved := layerTar(t, []entry{
		{name: "manifest.json", body: string(manifest), flag: tar.TypeReg},
		{name: "cfg.json", body: string(cfg), flag: tar.TypeReg},
		{name: "a/", flag: tar.TypeDir},
		{name: "a/layer.tar", body: string(ls[0]), flag: tar.TypeReg},
		{name: "b/", flag: tar.TypeDir},
		{name: "b/layer.tar", body: string(ls[1]), flag: tar.TypeReg},
	})
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tarOf writes a tarball of a folder's files, as Docker 25 and later save an OCI layout.
func tarOf(t *testing.T, dir string) string {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// linkedSave is a legacy save whose second layer entry is a link to a file of the first
// folder, as docker save links identical layers (here the manifest repeats the lower one).
func linkedSave(t *testing.T) string {
	ls := layers(t)
	manifest, _ := json.Marshal([]any{map[string]any{"Config": "./cfg.json", "Layers": []string{"a/layer.tar", "c/layer.tar", "b/layer.tar"}}})
	saved := layerTar(t, []entry{
		{name: "a/", flag: tar.TypeDir},
		{name: "a/layer.tar", body: string(ls[0]), flag: tar.TypeReg},
		{name: "b/", flag: tar.TypeDir},
		{name: "b/layer.tar", body: string(ls[1]), flag: tar.TypeReg},
		{name: "c/", flag: tar.TypeDir},
		{name: "c/layer.tar", link: "../a/layer.tar", flag: tar.TypeSymlink},
		{name: "cfg.json", body: string(config(t)), flag: tar.TypeReg},
		{name: "manifest.json", body: string(manifest), flag: tar.TypeReg},
	})
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnpackAppliesLayersLikeADaemon(t *testing.T) {
	for name, src := range map[string]string{"oci layout": ociLayout(t), "docker save": legacySave(t),
		"docker save of docker 25": tarOf(t, ociLayout(t)), "docker save with a linked layer": linkedSave(t)} {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			root, err := Unpack(src, cache)
			if err != nil {
				t.Fatal(err)
			}
			read := func(p string) string {
				b, err := os.ReadFile(filepath.Join(root, p))
				if err != nil {
					return "<" + err.Error() + ">"
				}
				return string(b)
			}
			if got := read("etc/os-release"); got != "ID=upper\n" {
				t.Errorf("upper layer not applied: %q", got)
			}
			for _, gone := range []string{"etc/removed", "opt/old", "dev/null"} {
				if _, err := os.Lstat(filepath.Join(root, gone)); err == nil {
					t.Errorf("%s should not be there (whiteout, opaque folder, device)", gone)
				}
			}
			if read("opt/new") != "new" || read("bin/alias") != "#!/bin/sh\n" {
				t.Errorf("opt/new %q, bin/alias %q", read("opt/new"), read("bin/alias"))
			}
			if link, _ := os.Readlink(filepath.Join(root, "bin/sh")); link != "/bin/tool" {
				t.Errorf("symlink = %q", link)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape")); err == nil {
				t.Error("an entry left the root")
			}
			for _, d := range MountPoints.Dirs {
				if info, err := os.Stat(filepath.Join(root, d)); err != nil || !info.IsDir() {
					t.Errorf("mount point %s: %v", d, err)
				}
			}
			again, err := Unpack(src, cache)
			if err != nil || again != root {
				t.Fatalf("second unpack: %s %v, want the cached %s", again, err, root)
			}
		})
	}
}

func TestUnpackRefusesWhatIsNoImage(t *testing.T) {
	empty := t.TempDir()
	notTar := filepath.Join(t.TempDir(), "x.tar")
	os.WriteFile(notTar, []byte("not a tarball"), 0o644)
	for name, src := range map[string]string{"empty folder": empty, "not a tarball": notTar, "missing": filepath.Join(empty, "nope")} {
		if _, err := Unpack(src, t.TempDir()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
