//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

var shaLine = regexp.MustCompile(`(?m)^# prompt_sha256: ([0-9a-f]{64})$`)

// promptsSHA runs aa-grade prompts with args and returns its output and the hash it states.
func promptsSHA(t *testing.T, args ...string) (string, string) {
	t.Helper()
	r := aaGrade(t, nil, append([]string{"prompts"}, args...)...)
	m := shaLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("prompts %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout, m[1]
}

// TestPromptSetInRunJSON: the set aa-grade prompts writes out is the built-in one (same hash
// read back), run.json records its hash, a resume with the same set written to a file is
// accepted and one with another set is refused.
func TestPromptSetInRunJSON(t *testing.T) {
	dir := t.TempDir()
	builtin, sha := promptsSHA(t)
	saved := filepath.Join(dir, "saved.prompts")
	if err := os.WriteFile(saved, []byte(builtin), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, again := promptsSHA(t, "--prompts", saved); again != sha {
		t.Fatalf("the set written out hashes %s read back, %s built in", again, sha)
	}
	_, other := promptsSHA(t, "--prompts", otherSet)
	if other == sha {
		t.Fatal("the other set is the built-in one")
	}
	out := filepath.Join(dir, "run")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	args := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901", "--repeats", "1", "--out", out}
	if r := aaGrade(t, env, args...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var header struct {
		PromptSHA256 string `json:"prompt_sha256"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if json.Unmarshal(b, &header) != nil || header.PromptSHA256 != sha {
		t.Fatalf("run.json = %s, want prompt_sha256 %s", b, sha)
	}
	if r := aaGrade(t, env, append(args, "--prompts", saved)...); r.code != 0 {
		t.Fatalf("the same set from a file: exit %d\n%s", r.code, r.stderr)
	}
	r := aaGrade(t, env, append(args, "--prompts", otherSet)...)
	if r.code != 2 || !strings.Contains(r.stderr, "prompt_sha256 was "+sha+", now "+other) {
		t.Fatalf("another set: exit %d\n%s", r.code, r.stderr)
	}
}

// TestPromptFilesAreChecked: a set missing a key, with an unknown key or a placeholder its
// key does not have is a usage error naming it, before anything runs.
func TestPromptFilesAreChecked(t *testing.T) {
	builtin, _ := promptsSHA(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for name, c := range map[string]struct {
		flag, text, want string
	}{
		"missing key":     {"--prompts", strings.Replace(builtin, "--- continue ---\n", "", 1), "missing keys: continue"},
		"unknown key":     {"--prompts", builtin + "--- contnue ---\nx\n", `unknown key "contnue"`},
		"bad task file":   {"--prompt-file", "Write {{output}} to {{output_path}}.", "(task): unknown placeholder {{output}}"},
		"empty task file": {"--prompt-file", "", "not a task prompt: it is empty"},
		"task file with no answer": {"--prompt-file", "Find the root cause.",
			"not a task prompt: it never says where the answer goes ({{output_path}})"},
	} {
		t.Run(name, func(t *testing.T) {
			path := write(strings.ReplaceAll(name, " ", "-"), c.text)
			for _, args := range [][]string{{"prompts", c.flag, path}, {"run", "--dataset", "demo", "--model", "builtin/baseline", c.flag, path}} {
				r := aaGrade(t, nil, args...)
				r.checkExit(t, 2)
				textcheck.Has(t, args[0]+"'s stderr", r.stderr, c.flag+" "+path+": ", c.want)
			}
		})
	}
}

// TestPromptsFromStirrupChecksTheCopy: --from-stirrup refuses a copy that is not release
// 0.1.9, naming the files that differ (the fixture laid out like Stirrup's files differs in
// every one), a path with no package, and --prompts beside it; each is a usage error.
func TestPromptsFromStirrupChecksTheCopy(t *testing.T) {
	for args, want := range map[string][]string{
		"--from-stirrup harness/vocab/promptset/testdata/stirrup-layout":                       {"not Stirrup 0.1.9", "core/agent.py", "utils/text.py"},
		"--from-stirrup harness/vocab/promptset/testdata":                                      {"no Stirrup package"},
		"--from-stirrup harness/vocab/promptset/testdata/stirrup-layout --prompts " + otherSet: {"--from-stirrup and --prompts"},
	} {
		r := aaGrade(t, nil, append([]string{"prompts"}, strings.Fields(args)...)...)
		r.checkExit(t, 2)
		if r.stdout != "" {
			t.Errorf("prompts %s: printed on stdout:\n%s", args, r.stdout)
		}
		if n := strings.Count(r.stderr, "\n"); n != 1 {
			t.Errorf("prompts %s: stderr of %d lines, want 1:\n%s", args, n, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("prompts %s: %q does not say %q", args, r.stderr, w)
			}
		}
	}
}
