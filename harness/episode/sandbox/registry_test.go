//go:build linux

package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakeregistry"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// testImageRegistry is a registry on 127.0.0.1 holding aa/sandbox:1: the test image (saved
// by docker save) where AA_GRADE_TEST_IMAGE names one, else a small image made of this
// machine's bash, its libraries and a marker file. It says which.
func testImageRegistry(t *testing.T) (reg *fakeregistry.Registry, real bool) {
	reg = fakeregistry.New(t)
	if img := os.Getenv("AA_GRADE_TEST_IMAGE"); img != "" && (&Docker{Image: img}).Available() == nil {
		dir := t.TempDir()
		saved := filepath.Join(dir, "image.tar")
		if out, err := exec.Command("docker", "save", "-o", saved, img).CombinedOutput(); err != nil {
			t.Fatalf("docker save: %v: %s", err, out)
		}
		if _, err := reg.PushDockerSave("aa/sandbox", "1", saved, dir); err != nil {
			t.Fatal(err)
		}
		return reg, true
	}
	config, _ := json.Marshal(map[string]any{"os": "linux", "architecture": runtime.GOARCH, "rootfs": map[string]any{"type": "layers"}})
	layer := reg.PutBlob("application/vnd.oci.image.layer.v1.tar", hostBashLayer(t))
	reg.PushImage("aa/sandbox", "1", registry.MediaOCIManifest, fakeregistry.Image{Config: config, Layers: []fakeregistry.Descriptor{layer}})
	return reg, false
}

// hostBashLayer is a layer holding this machine's bash and the libraries it and the guest (the
// test binary) load, and /etc/synthetic-image.
func hostBashLayer(t *testing.T) []byte {
	exe, _ := os.Executable()
	files := map[string]bool{"/bin/bash": true}
	for _, program := range []string{"/bin/bash", exe} {
		out, _ := exec.Command("ldd", program).Output() // a static program has none
		for _, m := range regexp.MustCompile(`(?m)(/\S+) \(0x`).FindAllStringSubmatch(string(out), -1) {
			files[m[1]] = true
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	for f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		add(f, 0o755, data)
	}
	add("/etc/synthetic-image", 0o644, []byte("yes\n"))
	tw.Close()
	return buf.Bytes()
}

// TestBwrapRunsOverAPulledImage: an image pulled from a registry (behind a token) becomes the
// episode's `/` under bwrap; a second use of the reference touches no network.
func TestBwrapRunsOverAPulledImage(t *testing.T) {
	if (&Bwrap{}).Available() != nil {
		t.Skip("no bwrap")
	}
	reg, real := testImageRegistry(t)
	reg.SetAuth("pull-token", "", "")
	ref := reg.Host + "/aa/sandbox:1"
	cache := t.TempDir()
	b := &Bwrap{}
	var told []Event
	if err := UseImage(context.Background(), b, ref, cache, func(e Event) { told = append(told, e) }); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 {
		t.Fatalf("told %+v, want one event", told)
	}
	if p, ok := told[0].(PullingImage); !ok {
		t.Errorf("told %T, want PullingImage", told[0])
	} else if p.Ref.String() != ref {
		t.Errorf("told the pull of %s, want %s", p.Ref, ref)
	} else if p.Layers != 1 {
		t.Errorf("told %d layers, want 1", p.Layers)
	}
	sb := start(t, b, newFixture(t))
	want := "yes\n"
	script := `echo "$(</etc/synthetic-image)"; echo k8s_*.tsv` // bash alone: its builtins
	if real {
		want = "python3 ok\n"
		script = `python3 -c "import pandas; print('python3 ok')"; ls k8s_*.tsv`
	}
	if r := run(t, sb, script); r.Stdout != want+"k8s_events_raw.tsv\n" {
		t.Fatalf("over the pulled image: %+v", r)
	}
	if gotRef, digest := ImageOf(b); gotRef != ref || !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("ImageOf = %s %s", gotRef, digest)
	}
	served := reg.Requests()
	if err := UseImage(context.Background(), &Bwrap{}, ref, cache, nil); err != nil || reg.Requests() != served {
		t.Fatalf("second use: %v, %d requests", err, reg.Requests()-served)
	}
}

// TestBadRegistryReferences: what cannot be pulled is one line; a registry that cannot be
// reached is the infrastructure's failure, the rest the reference's.
func TestBadRegistryReferences(t *testing.T) {
	reg := fakeregistry.New(t)
	reg.PushIndex("aa/arm", "1", registry.MediaOCIIndex, []fakeregistry.Descriptor{{MediaType: registry.MediaOCIManifest,
		Digest: "sha256:" + strings.Repeat("0", 64), Platform: map[string]string{"os": "linux", "architecture": "mips64le"}}})
	reg.SetAuth("t", "u", "p")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for ref, want := range map[string]string{
		"127.0.0.1:1/aa/sandbox:1":  "registry 127.0.0.1:1 unreachable",
		reg.Host + "/aa/sandbox:9":  "refuses anonymous access",
		"not-a-file.tar":            "is none",
		"Registry.example/UPPER:1x": "is none",
	} {
		err := UseImage(context.Background(), &Bwrap{}, ref, t.TempDir(), nil)
		if err == nil {
			t.Errorf("%s: no error, want %q", ref, want)
			continue
		}
		textcheck.Has(t, ref+": the error", err.Error(), want)
		textcheck.Lacks(t, ref+": the error", err.Error(), "\n")
		if unavailable := strings.HasPrefix(ref, "127.0.0.1:1/"); errors.Is(err, ErrUnavailable) != unavailable {
			t.Errorf("%s: errors.Is(ErrUnavailable) = %v", ref, !unavailable)
		}
	}
	reg.SetAuth("", "", "")
	if err := UseImage(context.Background(), &Bwrap{}, reg.Host+"/aa/arm:1", t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "has no linux/"+runtime.GOARCH+" build (it has linux/mips64le)") {
		t.Errorf("another machine's image: %v", err)
	}
}

// TestDockerPullsARegistryReference: the daemon pulls an image that names its registry (here
// one on 127.0.0.1, which Docker speaks to over plain HTTP), and the episode runs in it; a tag
// the registry lacks is one line, the reference's fault.
func TestDockerPullsARegistryReference(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	reg, _ := testImageRegistry(t)
	ref := reg.Host + "/aa/sandbox:1"
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	d := &Docker{}
	t.Cleanup(func() { Release(d) })
	var told []Event
	if err := UseImage(context.Background(), d, ref, "", func(e Event) { told = append(told, e) }); err != nil {
		t.Fatal(err)
	}
	if want := []Event{PullingThroughDaemon{Ref: ref}}; !slices.Equal(told, want) {
		t.Errorf("told %+v, want %+v", told, want)
	}
	sb := start(t, d, newFixture(t))
	if r := run(t, sb, `python3 -c "import pandas; print('python3 ok')"`); r.Stdout != "python3 ok\n" {
		t.Fatalf("in the pulled image: %+v", r)
	}
	err := UseImage(context.Background(), &Docker{}, reg.Host+"/aa/sandbox:2", "", nil)
	if err == nil {
		t.Fatal("unknown tag: no error")
	}
	textcheck.Has(t, "the error of an unknown tag", err.Error(), "the Docker daemon cannot pull "+reg.Host+"/aa/sandbox:2: ")
	textcheck.Lacks(t, "the error of an unknown tag", err.Error(), "\n")
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("unknown tag: %v is ErrUnavailable, want it not", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	err = UseImage(context.Background(), &Docker{}, "127.0.0.1:1/aa/sandbox:1", "", nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unreachable registry: %v, want ErrUnavailable", err)
	}
	if !textcheck.Has(t, "the error of an unreachable registry", err.Error(), "connection refused") {
		t.FailNow()
	}
}
