//go:build linux

package sandbox

import (
	"context"
	"debug/elf"
	"os"
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
