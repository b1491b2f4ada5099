//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNextRunSaysWhatItRemovedByKind: after a run that died with a scratch folder and
// containers left, the next run counts each kind by its name (not "3 scratch folders and
// cgroups" when two of them were containers).
func TestNextRunSaysWhatItRemovedByKind(t *testing.T) {
	img := dockerImage(t)
	const deadOwner = "999999999-1"
	// Other aa-grade processes (other test packages) remove dead runs' containers too, at
	// their own start: when one of them takes ours first, the case is tried again.
	for try := 1; ; try++ {
		tmp := t.TempDir()
		if err := os.Mkdir(filepath.Join(tmp, "aa-grade-"+deadOwner), 0o700); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			name := "aa-grade-" + deadOwner + "-test" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(try) + "-" + strconv.Itoa(i)
			out, err := exec.Command("docker", "create", "--network", "none", "--name", name, "--label", "aa-grade.owner="+deadOwner, img, "true").CombinedOutput()
			if err != nil {
				t.Fatalf("docker create: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
		}
		r := aaGrade(t, []string{"TMPDIR=" + tmp, "XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline",
			"--tasks", "902", "--repeats", "1", "--out", filepath.Join(t.TempDir(), "run"))
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if left, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=aa-grade.owner="+deadOwner).Output(); strings.TrimSpace(string(left)) != "" {
			t.Fatalf("containers of the dead run left: %s", left)
		}
		// Other runs on this machine may have died too: their cgroups and containers count.
		line := regexp.MustCompile(`(?m)^removed 1 scratch folder\b.* left by aa-grade runs that died$`).FindString(r.stderr)
		if line == "" {
			t.Fatalf("no line saying what was removed by kind:\n%s", r.stderr)
		}
		n := 0
		if m := regexp.MustCompile(`(\d+) containers?\b`).FindStringSubmatch(line); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if n >= 2 {
			return
		}
		if try == 3 {
			t.Fatalf("%d containers removed, want 2 or more (three times another process removed them first?):\n%s", n, r.stderr)
		}
	}
}
