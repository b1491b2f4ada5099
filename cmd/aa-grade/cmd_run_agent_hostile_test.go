//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// agentRunner runs `aa-grade run --agent` with a hostile program of the test's own, as
// root or as the unprivileged user AA_GRADE_TEST_USER, on each isolating backend.
type agentRunner struct {
	name     string
	cred     *syscall.Credential // nil: as the test runs
	binary   string              // the aa-grade binary it may run
	backends [][]string          // the --sandbox flags of each backend it runs on
}

// agentRunners are the users a hostile agent test runs as: the test's own, and when that is
// root and AA_GRADE_TEST_USER is set, that user too, with its groups (on docker too when the
// daemon's socket lets one of them in: .ci/run puts the user in the docker group).
func agentRunners(t *testing.T) []agentRunner {
	t.Helper()
	self := agentRunner{name: "user-" + strconv.Itoa(os.Geteuid()), binary: binary, backends: [][]string{{"--sandbox", "bwrap"}, {"--sandbox", "landlock"}}}
	if img := os.Getenv("AA_GRADE_TEST_IMAGE"); img != "" {
		self.backends = append(self.backends, []string{"--sandbox", "docker", "--sandbox-image", img})
	}
	runners := []agentRunner{self}
	name := os.Getenv("AA_GRADE_TEST_USER")
	if os.Geteuid() != 0 || name == "" {
		return runners
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("AA_GRADE_TEST_USER: %v", err)
	}
	cred, err := credentialOf(u)
	if err != nil {
		t.Fatalf("AA_GRADE_TEST_USER: %v", err)
	}
	other := agentRunner{name: name, cred: cred, binary: filepath.Join(sharedDir(t), "aa-grade"), backends: self.backends[:2]}
	if len(self.backends) > 2 && dockerLetsIn(cred) {
		other.backends = self.backends
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.binary, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return append(runners, other)
}

// credentialOf is what a process of u runs with: its user, group and supplementary groups.
func credentialOf(u *user.User) (*syscall.Credential, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", u.Username, u.Gid, err)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("the groups of user %s: %w", u.Username, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %s: group %q: %w", u.Username, id, err)
		}
		cred.Groups = append(cred.Groups, uint32(g))
	}
	return cred, nil
}

// dockerLetsIn reports whether a process running as cred may use the Docker daemon's socket:
// its group's or its owner's read and write bits, for one of cred's groups or its user.
func dockerLetsIn(cred *syscall.Credential) bool {
	var st syscall.Stat_t
	if syscall.Stat("/var/run/docker.sock", &st) != nil {
		return false
	}
	switch {
	case st.Uid == cred.Uid:
		return st.Mode&0o600 == 0o600
	case st.Gid == cred.Gid || slices.Contains(cred.Groups, st.Gid):
		return st.Mode&0o060 == 0o060
	}
	return st.Mode&0o006 == 0o006
}

// sharedDir is a fresh folder every user may read and search, the way to it included.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ownDir is a fresh folder of r's user, where its runs write (the run folder, the cache).
func (r agentRunner) ownDir(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t)
	if r.cred != nil {
		if err := os.Chown(dir, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs aa-grade as r's user from the module root, with a cache of its own and env.
func (r agentRunner) run(t *testing.T, home string, env []string, args ...string) result {
	t.Helper()
	// A provider that answers only the models list, which run checks before the first call;
	// a test whose agent calls the model gives its own in env.
	provider := httptest.NewServer(withModelsList(http.NotFound))
	t.Cleanup(provider.Close)
	cmd := exec.Command(r.binary, args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "HF_HUB_CACHE="+filepath.Join(home, "hub"),
		"HF_ENDPOINT=http://127.0.0.1:9", "HF_TOKEN=", "OPENAI_API_KEY=sk-unused", "OPENAI_BASE_URL="+provider.URL)
	cmd.Env = append(cmd.Env, env...)
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	return runBinary(t, cmd)
}

// agentStdout is what the agent of the episode in dir printed, as its trajectory records it.
func agentStdout(t *testing.T, dir string) string {
	t.Helper()
	for _, line := range strings.Split(readTrajectory(t, dir), "\n") {
		var rec runfolder.AgentRecord
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == model.KindAgent {
			return rec.Stdout
		}
	}
	t.Fatalf("%s: no agent record in the trajectory", dir)
	return ""
}

// linesWith are the lines of text that start with prefix.
func linesWith(text, prefix string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}
