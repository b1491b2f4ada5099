//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestWindowsBuildUnderWine runs the commands that need no sandbox with aa-grade.exe under
// Wine, given Windows paths (Z:\... for the host's files) and user files with Windows line
// endings, beside the Linux build on the same input: the same output, and the same files byte
// for byte (a task, the exports, the viewer's pages, a merged run folder).
func TestWindowsBuildUnderWine(t *testing.T) {
	w := wineForTest(t)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	noDaemon := []string{"DOCKER_HOST=tcp://127.0.0.1:9"}

	sameAsLinux(t, "--version", aaGrade(t, nil, "--version"), w.aaGrade(t, nil, "--version"))

	// No daemon: docker is the only backend, and that is what to start; none is no way out.
	r := w.aaGrade(t, noDaemon, "doctor")
	textcheck.Has(t, "doctor under Wine", r.stdout, "docker   unavailable (no Docker daemon answers at tcp://127.0.0.1:9",
		"--sandbox auto uses: nothing works: start Docker")
	textcheck.Lacks(t, "doctor under Wine", r.stdout+r.stderr, "install bubblewrap", "--sandbox none")
	r = w.aaGrade(t, noDaemon, "run", "--dataset", "demo", "--model", "builtin/baseline", "--out", winPath(at("none")))
	r.wantExit(t, 3)
	textcheck.Has(t, "run under Wine without a daemon", lastLine(r.stderr), "start Docker")
	textcheck.Lacks(t, "run under Wine without a daemon", r.stderr, "install bubblewrap", "--sandbox none")

	// The Hub's protocol and its cache.
	h := fakehub.New()
	defer h.Close()
	h.ServeSample(sampleRepo, fakehub.SampleDataset(3, 64<<10))
	lcache, wcache := at("lcache"), at("wcache")
	snapshots := `\datasets--ArtificialAnalysis--ITBench-AA\snapshots\`
	sameAsLinux(t, "data pull", aaGrade(t, hubEnv(h, lcache), "data", "pull"),
		w.aaGrade(t, hubEnv(h, winPath(wcache)), "data", "pull"),
		winPath(wcache)+snapshots, lcache+strings.ReplaceAll(snapshots, `\`, "/"))
	sameAsLinux(t, "data ls", aaGrade(t, hubEnv(h, lcache), "data", "ls"),
		w.aaGrade(t, hubEnv(h, winPath(wcache)), "data", "ls"), winPath(wcache), lcache)

	// A task generated, then validated with Windows line endings in its files.
	sameAsLinux(t, "tasks synth", aaGrade(t, nil, "tasks", "synth", "--seed", "3", "--out", at("l/task")),
		w.aaGrade(t, nil, "tasks", "synth", "--seed", "3", "--out", winPath(at("w/task"))), winPath(at("w/task")), at("l/task"))
	sameFiles(t, "tasks synth", at("l/task"), at("w/task"))
	crlf := at("crlf")
	for name, content := range readTree(t, at("l/task")) {
		testfs.Write(t, filepath.Join(crlf, name), strings.ReplaceAll(content, "\n", "\r\n"))
	}
	sameAsLinux(t, "tasks validate", aaGrade(t, nil, "tasks", "validate", crlf),
		w.aaGrade(t, nil, "tasks", "validate", winPath(crlf)), winPath(crlf), crlf)

	// Submissions with Windows line endings.
	testfs.Write(t, at("subs/Scenario-901/1.json"),
		"{\r\n  \"contributing_factors\": [\r\n    {\"name\": \"otel-demo/ConfigMap/flagd-config\"}\r\n  ]\r\n}\r\n")
	sameAsLinux(t, "grade of submissions", aaGrade(t, nil, "grade", "--dataset", "demo", at("subs")),
		w.aaGrade(t, nil, "grade", "--dataset", "demo", winPath(at("subs"))), winPath(at("subs")), at("subs"))

	// A run in two shards on Linux, merged by each build; the merged run graded, reported,
	// exported and viewed by each.
	for _, shard := range []string{"1/2", "2/2"} {
		aaGrade(t, nil, "run", "--dataset", "demo", "--model", "builtin/baseline", "--sandbox", "none", "--tasks", "901,902",
			"--repeats", "2", "--shard", shard, "--out", at("shard"+shard[:1])).wantExit(t, 0)
	}
	wshards := []string{winPath(at("shard1")), winPath(at("shard2"))}
	merged := []string{winPath(at("w/run")), at("l/run"), wshards[0], at("shard1"), wshards[1], at("shard2")}
	sameAsLinux(t, "merge", aaGrade(t, nil, "merge", "--out", at("l/run"), at("shard1"), at("shard2")),
		w.aaGrade(t, nil, "merge", "--out", winPath(at("w/run")), wshards[0], wshards[1]), merged...)
	sameFiles(t, "merge", at("l/run"), at("w/run"), inJSON(merged)...) // run.json names the shards
	run := at("l/run")
	for _, args := range [][]string{{"grade"}, {"grade", "--json"}} {
		sameAsLinux(t, strings.Join(args, " "), aaGrade(t, nil, append(args, run)...),
			w.aaGrade(t, nil, append(args, winPath(run))...), winPath(run), run)
	}
	// report's columns are as wide as the paths given, which Windows spells longer.
	linux, windows := aaGrade(t, nil, "report", run), w.aaGrade(t, nil, "report", winPath(run))
	linux.stdout, windows.stdout = columnsApart(linux.stdout), columnsApart(windows.stdout)
	sameAsLinux(t, "report", linux, windows, winPath(run), run)
	for _, args := range [][]string{{"export", "--format", "atif"}, {"export", "--format", "openai-jsonl"}, {"view"}} {
		what := strings.Join(args, " ")
		// Not beside the run folders: export refuses a folder whose parent holds runs.
		lout, wout := at("l-out/"+args[len(args)-1]), at("w-out/"+args[len(args)-1])
		paths := []string{winPath(wout) + `\index.html`, lout + "/index.html", winPath(wout), lout, winPath(run), run}
		sameAsLinux(t, what, aaGrade(t, nil, append(args, "--out", lout, run)...),
			w.aaGrade(t, nil, append(args, "--out", winPath(wout), winPath(run))...), paths...)
		sameFiles(t, what, lout, wout, paths...)
	}
}

// inJSON adds to pairs of paths (a Windows spelling, then the Linux one) the Windows
// spelling as a JSON string holds it.
func inJSON(pairs []string) []string {
	out := append([]string{}, pairs...)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, strings.ReplaceAll(pairs[i], `\`, `\\`), pairs[i+1])
	}
	return out
}

// columnsApart is a table with its columns one space apart.
func columnsApart(table string) string {
	lines := strings.Split(table, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
