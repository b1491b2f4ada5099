package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

func TestViewErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no run":        {[]string{"view"}, "at least one RUN"},
		"not a run":     {[]string{"view", "README.md"}, "README.md: not a run folder"},
		"absent":        {[]string{"view", "testdata/absent"}, "testdata/absent: not a run folder"},
		"any address":   {[]string{"view", "--addr", "0.0.0.0:7480", "testdata/runs/opus"}, "aa-grade: --addr \"0.0.0.0:7480\": not a loopback address: the viewer serves only this machine"},
		"a LAN address": {[]string{"view", "--addr", "192.168.1.2:7480", "testdata/runs/opus"}, "not a loopback address"},
		"out and addr":  {[]string{"view", "--out", t.TempDir(), "--addr", "7480", "testdata/runs/opus"}, "not both"},
		"a taken port": {[]string{"view", "--addr", taken.Addr().String(), "testdata/runs/opus"},
			"address already in use; give another port, or --addr 0 for any free one"},
		"out and host": {[]string{"view", "--out", t.TempDir(), "--host", "0.0.0.0", "testdata/runs/opus"}, "not both"},
		"two hosts": {[]string{"view", "--host", "0.0.0.0", "--addr", "127.0.0.1:7480", "testdata/runs/opus"},
			"--host 0.0.0.0 and --addr 127.0.0.1:7480 both name the host: give --addr only the port"},
	} {
		t.Run(name, func(t *testing.T) {
			r := aaGrade(t, nil, c.args...)
			r.wantExit(t, 2)
			textcheck.Has(t, "stderr", r.stderr, c.want)
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
				t.Errorf("stderr of %d lines, want one:\n%s", n+1, r.stderr)
			}
			if t.Failed() {
				t.FailNow()
			}
		})
	}
}

// TestViewFolderOfRuns: view takes a folder of runs for its runs, naming the folders in it that
// are not runs; a folder given that is not a run is skipped with why, the pages of the others
// written all the same (exit 1).
func TestViewFolderOfRuns(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	for _, name := range []string{"opus", "qwen"} {
		if err := os.CopyFS(filepath.Join(runs, name), os.DirFS(filepath.Join("..", "..", "testdata", "runs", name))); err != nil {
			t.Fatal(err)
		}
	}
	export := filepath.Join(runs, "opus-atif")
	testfs.Write(t, filepath.Join(export, "Scenario-2", "1", "trajectory.json"), "{}")
	cache := "XDG_CACHE_HOME=" + t.TempDir()

	pages := filepath.Join(dir, "pages")
	r := aaGrade(t, []string{cache}, "view", "--out", pages, runs)
	r.wantExit(t, 0)
	textcheck.Has(t, "stderr", r.stderr, "note: left out "+export+": not a run folder (no run.json)")
	textcheck.Has(t, "the index page", readFile(t, filepath.Join(pages, "index.html")), "opus", "qwen")

	notes := filepath.Join(dir, "notes")
	testfs.Write(t, filepath.Join(notes, "README.md"), "not a run")
	pages = filepath.Join(dir, "pages2")
	r = aaGrade(t, []string{cache}, "view", "--out", pages, filepath.Join(runs, "opus"), notes)
	r.wantExit(t, 1)
	textcheck.Has(t, "stderr", r.stderr, "warning: skipped "+notes+": not a run folder (no run.json), nor a folder of runs",
		"1 folder not viewed")
	if _, err := os.Stat(filepath.Join(pages, "index.html")); err != nil {
		t.Errorf("the pages of the run given with a folder that is not one: %v", err)
	}
}

// TestViewATIF: view shows ATIF trajectories of another harness beside runs: a Harbor job (a
// malformed trial's document named on its row, the others shown, none scored 0), and one
// document; a folder of answers is no folder of trajectories, and is skipped as before.
func TestViewATIF(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	harborTrial(t, job, "s901__a", "Scenario-901", "2026-11-27T09:00:00Z", `{"contributing_factors": []}`)
	harborTrial(t, job, "s902__b", "Scenario-902", "2026-11-27T09:00:00Z", "I looked at the pods.")
	harborTrial(t, job, "s903__c", "Scenario-903", "2026-11-27T09:00:00Z", "cut")
	bad := filepath.Join(job, "s903__c", "agent", "trajectory.json")
	testfs.Write(t, bad, `{"schema_version": "ATIF-v1.6", "steps": [`)
	cache := "XDG_CACHE_HOME=" + t.TempDir()

	pages := filepath.Join(dir, "pages")
	r := aaGrade(t, []string{cache}, "view", "--out", pages, "testdata/runs/opus", job,
		filepath.Join(job, "s901__a", "agent", "trajectory.json"))
	r.wantExit(t, 0)
	index := readFile(t, filepath.Join(pages, "index.html"))
	textcheck.Has(t, "the index page", index, "terminus-2 2.0.0", `href="atif/1/2.html"`, `href="atif/2/1.html"`,
		"not graded<", bad+": not an ATIF document")
	textcheck.Has(t, "a trial's page", readFile(t, filepath.Join(pages, "atif", "1", "2.html")), "I looked at the pods.")
	textcheck.Has(t, "a trial's document beside its page", readFile(t, filepath.Join(pages, "atif", "1", "1.json")), "ATIF-v1.6")

	answers := filepath.Join(dir, "answers")
	testfs.Write(t, filepath.Join(answers, "Scenario-901.json"), `{"contributing_factors": []}`)
	r = aaGrade(t, []string{cache}, "view", "--out", filepath.Join(dir, "pages2"), answers)
	r.wantExit(t, 2)
	textcheck.Has(t, "stderr", r.stderr, answers+": not a run folder")
}

// TestViewAddressNotHostPort: an --addr that is no address is a usage error, one line naming
// the flag, before anything is read.
func TestViewAddressNotHostPort(t *testing.T) {
	r := aaGrade(t, nil, "view", "--addr", "nonsense", "testdata/runs/opus")
	if want := "aa-grade: --addr \"nonsense\": want HOST:PORT, :PORT or PORT\n"; r.code != 2 || r.stderr != want {
		t.Fatalf("exit %d, want 2 and %q:\n%s", r.code, want, r.stderr)
	}
}

// TestView runs the baseline on a demo task it solves, then views the run: served on loopback, its
// episode graded against the demo dataset's ground truth, stopped by Ctrl-C with exit 0; and
// written as static pages with --out.
func TestView(t *testing.T) {
	cache := "XDG_CACHE_HOME=" + t.TempDir()
	run := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, []string{cache}, "run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "903", "--repeats", "1", "--out", run); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}

	cmd, line, stderr := startView(t, cache, "--addr", "127.0.0.1:0", run, "testdata/runs/opus")
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if url == "" {
		t.Fatalf("no URL printed: %q %s", line, stderr.String())
	}
	for path, want := range map[string]string{
		"":                             "builtin/baseline",
		"runs/1/Scenario-903/1.html":   "matches the root-cause group",
		"runs/2/Scenario-2/1.html":     "No turns recorded",
		"runs/1/Scenario-903/2.html":   "404",
		"runs/1/Scenario-903/../../..": "404",
	} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(body), want) && !strings.Contains(res.Status, want) {
			t.Errorf("%s: %s, lacks %q", path, res.Status, want)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after Ctrl-C: %v\n%s", err, stderr.String())
	}

	out := filepath.Join(t.TempDir(), "pages")
	if r := aaGrade(t, []string{cache}, "view", "--out", out, run); r.code != 0 || !strings.Contains(r.stdout, filepath.Join(out, "index.html")) {
		t.Fatalf("--out: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"index.html", "runs/1/Scenario-903/1.html", "runs/1/Scenario-903/1.trajectory.jsonl.zst"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// startView starts aa-grade view with args, its cache in the setting cache and the Hub out of
// reach, and reads the first line it prints (where it serves); the test's end kills it.
func startView(t *testing.T, cache string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"view"}, args...)...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), cache, "HF_HUB_CACHE="+t.TempDir(), "HF_ENDPOINT=http://127.0.0.1:9")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	return cmd, line, stderr
}

// TestViewHost: --host serves beyond loopback, warning that the episodes go to the network.
func TestViewHost(t *testing.T) {
	cmd, line, stderr := startView(t, "XDG_CACHE_HOME="+t.TempDir(), "--host", "0.0.0.0", "--addr", "0",
		"testdata/runs/opus")
	port := regexp.MustCompile(`http://0\.0\.0\.0:(\d+)/`).FindStringSubmatch(line)
	if port == nil {
		t.Fatalf("no URL on 0.0.0.0 printed: %q %s", line, stderr.String())
	}
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port[1]+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "viewer.example:" + port[1] // a name of the machine on its network
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	textcheck.Has(t, "the index page", string(body), "anthropic/claude-opus-4-7")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after Ctrl-C: %v\n%s", err, stderr.String())
	}
	textcheck.Has(t, "stderr", stderr.String(), "warning: serving to the network at 0.0.0.0:"+port[1]+", with no password")
}

// TestRecordedDataset: a Hub dataset is pinned to the commit the run recorded, whatever
// revision its spec names (runs record hf:OWNER/NAME@REV); any other spec is kept as it is.
func TestRecordedDataset(t *testing.T) {
	for _, c := range []struct {
		h    runfolder.Header
		want string
	}{
		{runfolder.Header{Dataset: "hf:o/n@main", DatasetCommit: "abc123"}, "hf:o/n@abc123"},
		{runfolder.Header{Dataset: "hf:o/n", DatasetCommit: "abc123"}, "hf:o/n@abc123"},
		{runfolder.Header{Dataset: "hf:o/n@main"}, "hf:o/n@main"},
		{runfolder.Header{Dataset: "demo", DatasetCommit: "abc123"}, "demo"},
		{runfolder.Header{Dataset: "./ITBench-AA"}, "./ITBench-AA"},
	} {
		if got := recordedDataset(c.h); got != c.want {
			t.Errorf("recordedDataset(%q, %q) = %q, want %q", c.h.Dataset, c.h.DatasetCommit, got, c.want)
		}
	}
}
