//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// doctorJSON runs aa-grade doctor --json and reads its report.
func doctorJSON(t *testing.T, env []string, args ...string) (doctorReport, result) {
	t.Helper()
	r := aaGrade(t, env, append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	return rep, r
}

// wantImageReport checks the report of doctor on an image that runs episodes, each field its
// own failure: the sandbox, the image and its digest, no error, and bash, jq and pandas in
// its tools. It stops the test when one is wrong.
func wantImageReport(t *testing.T, r result, rep doctorReport, backend, image, digest string) {
	t.Helper()
	r.wantExit(t, 0)
	for _, f := range []struct{ name, got, want string }{
		{"sandbox", rep.Sandbox, backend}, {"image", rep.Image, image}, {"image digest", rep.ImageDigest, digest}, {"error", rep.Error, ""},
	} {
		if f.got != f.want {
			t.Errorf("%s %q, want %q", f.name, f.got, f.want)
		}
	}
	if rep.Tools == nil {
		t.Fatalf("no tools in the report: %+v", rep)
	}
	for _, c := range []string{"bash", "jq"} {
		if !rep.Tools.Commands[c] {
			t.Errorf("no %s among the image's tools: %v", c, rep.Tools.Commands)
		}
	}
	if rep.Tools.Python["pandas"] == "" {
		t.Errorf("no pandas among the image's Python packages: %v", rep.Tools.Python)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestDoctorShowsTheDockerImage: doctor --sandbox docker --sandbox-image lists the tools and
// Python packages of that image, with its digest, and says when the image does not exist.
func TestDoctorShowsTheDockerImage(t *testing.T) {

	img := dockerImage(t)
	id, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	rep, r := doctorJSON(t, nil, "--sandbox", "docker", "--sandbox-image", img)
	wantImageReport(t, r, rep, sandbox.NameDocker, img, strings.TrimSpace(string(id)))
	text := aaGrade(t, nil, "doctor", "--sandbox", "docker", "--sandbox-image", img)
	if !strings.Contains(text.stdout, "Episodes run in: the docker sandbox, image "+img+" (sha256:") {
		t.Fatalf("text output:\n%s", text.stdout)
	}

	const missing = "aa-grade-no-such-image:doctor"
	rep, r = doctorJSON(t, []string{"AA_GRADE_SANDBOX=docker", "AA_GRADE_SANDBOX_IMAGE=" + missing})
	r.wantExit(t, 1)
	if got, want := [2]string{rep.Sandbox, rep.Image}, [2]string{sandbox.NameDocker, missing}; got != want {
		t.Errorf("the report's sandbox and image %q, want %q", got, want)
	}
	if rep.Tools != nil {
		t.Errorf("the report lists tools %+v, want none (no image)", rep.Tools)
	}
	textcheck.Has(t, "the report's error", rep.Error, "no image "+missing+": pull or build it")
	if n := strings.Count(r.stderr, "\n"); n != 1 {
		t.Errorf("stderr of %d lines, want 1:\n%s", n, r.stderr)
	}
	if t.Failed() {
		t.FailNow()
	}
	text = aaGrade(t, nil, "doctor", "--sandbox", "docker", "--sandbox-image", missing)
	if !strings.Contains(text.stdout, "Episodes cannot run there: no image "+missing) {
		t.Fatalf("text output:\n%s", text.stdout)
	}
}

// TestDoctorShowsTheImageOverBwrap: with bwrap, doctor unpacks the image as run does and
// lists what that root file system has (the test image saved by docker save), and says when
// the tarball is not there or its image cannot run an episode.
func TestDoctorShowsTheImageOverBwrap(t *testing.T) {
	if _, err := sandbox.Select(sandbox.NameBwrap); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	noBash := filepath.Join(dir, "no-bash.tar")
	os.WriteFile(noBash, savedImage(t, "no-bash:1", runtime.GOARCH, map[string]string{"etc/hello": "hi\n"}), 0o644)
	for name, c := range map[string]struct{ image, want string }{
		"no bash":    {noBash, "--sandbox-image: image " + noBash + " cannot run an episode (it needs bash"},
		"no tarball": {filepath.Join(dir, "absent.tar"), "no such file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			rep, r := doctorJSON(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "--sandbox", "bwrap", "--sandbox-image", c.image)
			r.wantExit(t, 1)
			if rep.Sandbox != sandbox.NameBwrap {
				t.Errorf("sandbox %s, want %s", rep.Sandbox, sandbox.NameBwrap)
			}
			if rep.Image != c.image {
				t.Errorf("image %s, want %s", rep.Image, c.image)
			}
			if rep.Tools != nil {
				t.Errorf("tools %+v of an image that cannot run, want none", rep.Tools)
			}
			textcheck.Has(t, "the report's error", rep.Error, c.want)
		})
	}

	img := dockerImage(t)
	saved := filepath.Join(dir, "image.tar")
	if out, err := exec.Command("docker", "save", "-o", saved, img).CombinedOutput(); err != nil {
		t.Fatalf("docker save: %v: %s", err, out)
	}
	rep, r := doctorJSON(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "AA_GRADE_SANDBOX=bwrap", "AA_GRADE_SANDBOX_IMAGE=" + saved})
	// The digest an unpacked image is known by is its config's, which docker calls its ID.
	id, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	wantImageReport(t, r, rep, sandbox.NameBwrap, saved, strings.TrimSpace(string(id)))
}
