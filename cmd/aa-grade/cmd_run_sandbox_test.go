//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/devtools/demogen"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestKillNineLeavesNothingOfTheEpisodes kills aa-grade (the one process, with SIGKILL) while
// its episodes run commands that detach (setsid, nohup, double fork): none of them may outlive
// it, and the next run removes the scratch folders (and, as root, the cgroups) it left. With
// docker, the killed run's containers stop with their guest (its attached input ends), are
// left stopped, and the next run removes them by their owner label, as docs/sandbox.md says,
// with the run's volume and the container that filled it (created, never started).
func TestKillNineLeavesNothingOfTheEpisodes(t *testing.T) {
	for _, name := range []string{sandbox.NameBwrap, sandbox.NameLandlock, sandbox.NameDocker} {
		t.Run(name, func(t *testing.T) {
			var image []string
			if name == sandbox.NameDocker {
				image = []string{"--sandbox-image", dockerImage(t)}
			}
			b, err := sandbox.Select(name)
			if err != nil {
				if os.Getenv("CI") != "" {
					t.Fatal(err)
				}
				t.Skip(err)
			}
			marker := fmt.Sprintf("1003.%d%d", os.Getpid(), len(b.Name()))
			detach := fmt.Sprintf("setsid sleep %s </dev/null >/dev/null 2>&1 & (nohup sleep %s >/dev/null 2>&1 &) ; sleep 0.1", marker, marker)
			s := newScriptedRun(t, fakemodel.Script{Turns: 100, Command: detach, Answer: answer901}, "901,902", "1")
			tmp := t.TempDir()
			env := append(s.env, "TMPDIR="+tmp)
			out := filepath.Join(t.TempDir(), "run")
			cmd, stderr := start(t, env, append(s.command(out, "--sandbox", name), image...)...)
			t.Cleanup(func() { killMarked(marker) })
			waitFor(t, func() bool { return len(marked(marker)) >= 4 }) // both episodes, both ways of detaching
			scratch, _ := filepath.Glob(filepath.Join(tmp, "aa-grade-"+strconv.Itoa(cmd.Process.Pid)+"-*"))
			if len(scratch) != 1 {
				t.Fatalf("scratch folders of the run: %v", scratch)
			}
			var cgroups, containers []string
			if name == sandbox.NameDocker {
				// Named after their owner, aa-grade-PID-START-N, as its cgroups are.
				t.Cleanup(func() { removeContainers(t, cmd.Process.Pid) })
				containers = containersOfRun(t, cmd.Process.Pid)
				if episodes := episodeContainers(containers); len(episodes) != 2 {
					t.Fatalf("containers of the running episodes: %v (all of the run: %v)", episodes, containers)
				}
				if fillers := len(containers) - 2; fillers != 1 {
					t.Fatalf("%d containers that fill the run's volume, want 1: %v", fillers, containers)
				}
			} else {
				cgroups, _ = filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/aa-grade-%d-*", cmd.Process.Pid))
				if os.Geteuid() == 0 && len(cgroups) == 0 {
					t.Fatal("no pids cgroup for the running episodes")
				}
			}

			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for len(marked(marker)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if left := marked(marker); len(left) > 0 {
				t.Fatalf("%d processes of the episodes outlived aa-grade, e.g. %s\n%s", len(left), left[0], stderr)
			}
			if name == sandbox.NameDocker {
				// The guest, the container's init, ends as its input does: the container stops.
				stopped := func() bool {
					for _, c := range episodeContainers(containersOfRun(t, cmd.Process.Pid)) {
						if !strings.HasSuffix(c, " exited") {
							return false
						}
					}
					return true
				}
				for !stopped() && time.Now().Before(deadline.Add(5*time.Second)) {
					time.Sleep(50 * time.Millisecond)
				}
				if !stopped() {
					t.Errorf("containers of the killed run still run: %v", containersOfRun(t, cmd.Process.Pid))
				}
			}

			r := aaGrade(t, append(env, "OPENAI_BASE_URL=http://127.0.0.1:9"), append([]string{"run", "--dataset", "demo", "--model", "builtin/baseline",
				"--tasks", "901", "--repeats", "1", "--sandbox", name, "--out", filepath.Join(t.TempDir(), "next")}, image...)...)
			if r.code != 0 || !strings.Contains(r.stderr, "left by aa-grade runs that died") {
				t.Fatalf("next run: exit %d\n%s", r.code, r.stderr)
			}
			for _, p := range append(scratch, cgroups...) {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s is still there after the next run", p)
				}
			}
			if name == sandbox.NameDocker {
				if left := containersOfRun(t, cmd.Process.Pid); len(left) > 0 {
					t.Errorf("containers of the killed run are still there after the next run: %v", left)
				}
				volumes, err := exec.Command("docker", "volume", "ls", "--quiet", "--filter",
					fmt.Sprintf("name=aa-grade-%d-", cmd.Process.Pid)).Output()
				if err != nil || len(bytes.TrimSpace(volumes)) > 0 {
					t.Errorf("the killed run's volume after the next run: %s %v", volumes, err)
				}
			}
		})
	}
}

// containersOf lists the containers aa-grade process pid made, as "NAME STATE".
func containersOfRun(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "--all", "--filter", fmt.Sprintf("name=^aa-grade-%d-", pid), "--format", "{{.Names}} {{.State}}").Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var list []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			list = append(list, line)
		}
	}
	return list
}

// episodeContainers are those of containers (as containersOfRun lists them) that ran
// episodes, not the one that fills the run's volume, which never starts.
func episodeContainers(containers []string) []string {
	var episodes []string
	for _, c := range containers {
		if name, _, _ := strings.Cut(c, " "); !strings.HasSuffix(name, "-fill") {
			episodes = append(episodes, c)
		}
	}
	return episodes
}

// removeContainers removes what a failed test left of aa-grade process pid.
func removeContainers(t *testing.T, pid int) {
	for _, c := range containersOfRun(t, pid) {
		name, _, _ := strings.Cut(c, " ")
		exec.Command("docker", "rm", "--force", name).Run()
	}
}

// marked lists the processes whose command line holds marker.
func marked(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// killMarked kills what a failed test left running.
func killMarked(marker string) {
	for _, p := range marked(marker) {
		pid, _, _ := strings.Cut(p, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// TestDiskLimitIsAnErrorTheModelSees runs a model that writes more than --disk-limit: its
// command fails with "No space left on device", which the model reads, and the run goes on. On
// every backend that says it bounds the disk here (Landlock as root, or with user namespaces).
func TestDiskLimitIsAnErrorTheModelSees(t *testing.T) {
	for _, name := range []string{sandbox.NameBwrap, sandbox.NameLandlock} {
		t.Run(name, func(t *testing.T) {
			if _, err := sandbox.Select(name); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatal(err)
				}
				t.Skip(err)
			}
			if holds, why := guaranteeHere(t, name, sandbox.GuaranteeDiskLimit); !holds {
				t.Skip(why)
			}
			s := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "head -c 40M /dev/zero > big; ls -l big", Answer: answer901}, "901", "1")
			out := filepath.Join(t.TempDir(), "run")
			if r := aaGrade(t, s.env, s.command(out, "--sandbox", name, "--disk-limit", "16MiB", "--memory-limit", "512MiB")...); r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			f, err := runfolder.OpenTrajectory(filepath.Join(out, "episodes", "Scenario-901", "1"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			trajectory, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			// The file stops at 16 MiB, less what else the workspace holds.
			size := regexp.MustCompile(` (\d+) [A-Z][a-z]{2} `).FindSubmatch(trajectory)
			if !strings.Contains(string(trajectory), "No space left on device") || size == nil {
				t.Fatalf("the model did not see the disk limit:\n%.3000s", trajectory)
			}
			if n, _ := strconv.Atoi(string(size[1])); n > 16<<20 || n < 15<<20 {
				t.Fatalf("big is %d bytes with --disk-limit 16MiB:\n%.3000s", n, trajectory)
			}
		})
	}
}

// guaranteeHere says whether aa-grade doctor finds that backend keeps guarantee here, and its
// detail. (Asked of aa-grade: finding it out starts the guest, which this test binary is not.)
func guaranteeHere(t *testing.T, backend, guarantee string) (bool, string) {
	t.Helper()
	r := aaGrade(t, nil, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, b := range rep.Backends {
		for _, g := range b.Guarantees {
			if b.Name == backend && g.Name == guarantee {
				return g.Holds, g.Detail
			}
		}
	}
	t.Fatalf("doctor does not say whether %s keeps %s", backend, guarantee)
	return false, ""
}

// dockerImage is the image CI builds for the docker sandbox from Debian packages (.ci/run);
// the docker tests are skipped without it, but under CI as root.
func dockerImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" {
		if os.Getenv("CI") != "" && os.Geteuid() == 0 {
			t.Fatal("AA_GRADE_TEST_IMAGE is not set under CI")
		}
		t.Skip("no AA_GRADE_TEST_IMAGE")
	}
	return img
}

// TestDockerRunsTheDemo runs the demo end to end in containers, with builtin/baseline and with
// a scripted model, and leaves no container behind.
func TestDockerRunsTheDemo(t *testing.T) {
	img := dockerImage(t)
	baseline := filepath.Join(t.TempDir(), "baseline")
	r := aaGrade(t, nil, "run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "1", "--sandbox", "docker",
		"--sandbox-image", img, "--out", baseline)
	r.wantExit(t, 0)
	textcheck.Has(t, "the output of the baseline in docker", r.stdout+r.stderr, "docker sandbox")
	if !textcheck.Has(t, "the stdout of the baseline in docker", r.stdout, fmt.Sprintf("over %d tasks x 1 repeat", len(demogen.Tasks))) || t.Failed() {
		t.FailNow()
	}
	h, err := runfolder.ReadHeader(baseline)
	if err != nil {
		t.Fatal(err)
	}
	if h.Image != img {
		t.Errorf("run.json: image %q, want %q", h.Image, img)
	}
	if !strings.HasPrefix(h.ImageDigest, "sha256:") {
		t.Errorf("run.json: image digest %q, want sha256:...", h.ImageDigest)
	}
	if h.Python["pandas"] == "" {
		t.Errorf("run.json: no pandas among the Python packages %v", h.Python)
	}
	if t.Failed() {
		t.FailNow()
	}
	s := newScriptedRun(t, fakemodel.Script{Turns: 4, Command: "ls alerts | head -3; id -u", Answer: answer901}, "901,902", "1")
	out := filepath.Join(t.TempDir(), "scripted")
	if r := aaGrade(t, s.env, s.command(out, "--sandbox", "docker", "--sandbox-image", img)...); r.code != 0 {
		t.Fatalf("scripted model in docker: exit %d\n%s", r.code, r.stderr)
	}
	if n := lines(t, filepath.Join(out, "results.jsonl")); n != 2 {
		t.Fatalf("%d results, want 2", n)
	}
}

// TestDockerBadInputIsOneClearLine: no daemon (exit 3), an image that does not exist, one
// without bash, one for another machine (exit 2: another image is the fix): each is found
// before the run's first line and is one line naming the fix; no run folder or container is
// left.
func TestDockerBadInputIsOneClearLine(t *testing.T) {
	dockerImage(t)
	empty := filepath.Join(t.TempDir(), "empty.tar")
	if out, err := exec.Command("tar", "-cf", empty, "-C", t.TempDir(), ".").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	const emptyImage = "aa-grade-test-empty:latest"
	if out, err := exec.Command("docker", "import", empty, emptyImage).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", emptyImage).Run() })
	other := map[string]string{"amd64": "arm64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	otherImage := "aa-grade-test-" + other + ":latest"
	loadImage(t, otherImage, other)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", otherImage).Run() })
	for name, c := range map[string]struct {
		env  []string
		args []string
		code int // 3: the machine; 2: the image named (another one is the fix)
		want string
	}{
		"no daemon":     {[]string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, nil, 3, "no Docker daemon answers at unix:///nonexistent/docker.sock"},
		"no such image": {nil, []string{"--sandbox-image", "aa-grade-no-such-image:1"}, 2, "no image aa-grade-no-such-image:1: pull or build it (docker pull aa-grade-no-such-image:1)"},
		"no bash":       {nil, []string{"--sandbox-image", emptyImage}, 2, "cannot run an episode (it needs bash"},
		"another arch":  {nil, []string{"--sandbox-image", otherImage}, 2, "is for linux/" + other + ", not linux/" + runtime.GOARCH},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901", "--repeats", "1",
				"--sandbox", "docker", "--out", out}, c.args...)
			r := aaGrade(t, c.env, args...)
			// Found before the run's first line: the error is all that is printed.
			r.wantErrorLine(t, c.code)
			if !textcheck.Has(t, "the error", r.stderr, c.want) {
				t.FailNow()
			}

			if _, err := os.Stat(out); err == nil {
				t.Fatal("a half-started run folder was left")
			}
			if left := containersOf(t, emptyImage); left != "" {
				t.Fatalf("containers left behind: %q", left)
			}
		})
	}
}

// containersOf lists the containers of an image (other tests run containers of their own at
// the same time).
func containersOf(t *testing.T, image string) string {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "ancestor="+image).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// loadImage loads an empty image for arch under name, as docker save writes one.
func loadImage(t *testing.T, name, arch string) {
	t.Helper()
	load := exec.Command("docker", "load")
	load.Stdin = bytes.NewReader(savedImage(t, name, arch, nil))
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("docker load: %v: %s", err, out)
	}
}

// TestCleanRunsLeaveNothing: a run and doctor that end normally leave no scratch folder in the
// temporary folder, so the next start has nothing of theirs to remove. (Whether it says so is
// not checked: on a shared machine other processes' leftover cgroups may be removed.)
func TestCleanRunsLeaveNothing(t *testing.T) {
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp, "XDG_CACHE_HOME=" + t.TempDir()}
	run := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "902", "--repeats", "1", "--out", filepath.Join(t.TempDir(), "run")}
	for i, args := range [][]string{run, {"doctor"}, run} {
		r := aaGrade(t, env, args...)
		if r.code != 0 {
			t.Fatalf("%s (%d): exit %d\n%s%s", args[0], i, r.code, r.stdout, r.stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "aa-grade-*")); len(left) > 0 {
			t.Fatalf("%s left %v", args[0], left)
		}
	}
}
