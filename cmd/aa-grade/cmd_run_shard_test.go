package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestShardIsLabelledByRepeat: shard 1/2 of 2 tasks x 3 repeats holds Scenario-901's repeats
// 1 and 3 and Scenario-902's repeat 2. run and grade say the score is over 3 of the 6
// episodes, put each score under its repeat (blank where the shard has none), point to
// merge, and grade scores the shard as run did, not the other shard's episodes as missing.
func TestShardIsLabelledByRepeat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "shard")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	run := aaGrade(t, env, "run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,902", "--repeats", "3",
		"--shard", "1/2", "--out", out)
	if run.code != 0 {
		t.Fatalf("run: exit %d\n%s", run.code, run.stderr)
	}
	grade := aaGrade(t, env, "grade", out)
	if grade.code != 0 {
		t.Fatalf("grade: exit %d\n%s", grade.code, grade.stderr)
	}
	for name, stdout := range map[string]string{"run": run.stdout, "grade": grade.stdout} {
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^TASK +R1 +R2 +R3 +MEAN$`),
			regexp.MustCompile(`(?m)^Scenario-901 +\d\.\d\d +\d\.\d\d +\d\.\d{3}$`), // R1, blank R2, R3, mean
			regexp.MustCompile(`(?m)^Scenario-902 {8,}\d\.\d\d {8,}\d\.\d{3}$`),     // blank R1, R2, blank R3
			regexp.MustCompile(`over 3 of the 6 episodes of 2 tasks x 3 repeats`),
			regexp.MustCompile("aa-grade merge"),
		} {
			if !want.MatchString(stdout) {
				t.Errorf("%s: the output does not match %s:\n%s", name, want, stdout)
			}
		}
		if strings.Contains(stdout, "missing") {
			t.Errorf("%s: the other shard's episodes are graded as missing:\n%s", name, stdout)
		}
	}
	score := regexp.MustCompile(`Score [0-9.]+`)
	if a, b := score.FindString(run.stdout), score.FindString(grade.stdout); a == "" || a != b {
		t.Errorf("run says %q, grade %q", a, b)
	}
}
