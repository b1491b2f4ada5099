//go:build linux

package sandbox

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeSaysWhenThereIsNoShell: over a root without bash, the probe says the sandbox
// cannot run bash (not that it could not read a list of Python packages).
func TestProbeSaysWhenThereIsNoShell(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proc", "dev", "tmp", "home/user", "run/aa-grade", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "run/aa-grade/agent"), nil, 0o755)
	b := &Bwrap{Rootfs: root}
	if err := b.Available(); err != nil {
		t.Skip(err)
	}
	if exe, _ := os.Executable(); !static(t, exe) {
		t.Skip("the test binary is not static: it cannot run over an empty root")
	}
	_, err := ProbeTools(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), `the sandbox cannot run bash: exec: "bash": executable file not found in $PATH`) {
		t.Fatalf("err = %v", err)
	}
}

// static says whether the program at path needs no dynamic loader.
func static(t *testing.T, path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// TestCannotRunEpisodeNamesADynamicGuest: an image that cannot run the guest because this
// aa-grade is dynamically linked says so, and how to get a static one.
func TestCannotRunEpisodeNamesADynamicGuest(t *testing.T) {
	sh, err := exec.LookPath("bash")
	if err != nil || static(t, sh) {
		t.Skip("no dynamically linked bash here to stand for a dynamic aa-grade")
	}
	err = cannotRunEpisode("img.tar", "amd64", sh, true, errors.New("the sandbox guest died (EOF)"))
	if !strings.Contains(err.Error(), "dynamically linked (it needs /") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("dynamic: %v", err)
	}
	// The guest ran, and found no bash: its linking is not the matter.
	for _, guest := range []string{sh, filepath.Join(t.TempDir(), "absent")} {
		err = cannotRunEpisode("img.tar", "amd64", guest, false, errors.New(`exec: "bash": executable file not found in $PATH`))
		if strings.Contains(err.Error(), "dynamically") || !strings.HasSuffix(err.Error(), "use an image with bash, as the reference one (deploy/sandbox/Dockerfile)") {
			t.Fatalf("%s: %v", guest, err)
		}
	}
}
