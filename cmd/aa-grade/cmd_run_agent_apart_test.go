//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// apartScript is a hostile agent of a run of 4 episodes at once. It leaves three processes
// behind (one in a session of its own, one double-forked, one that ignores SIGTERM, SIGHUP
// and SIGINT), marks its workspace, and reports its gateway token and workspace in a model
// call; the test, which sees the calls reach its fake provider, answers the agents' next calls
// with every episode's token and workspace (sideChannel), a channel no sandbox has.
// Then it calls its gateway with each other episode's token, opens each other episode's
// marker, and looks in /proc and the folders it can list for the others' processes and
// markers, printing what it reached.
const apartScript = `self=$AA_GRADE_AGENT_DIR
tag=$(cat "$self/tag")
id=${OPENAI_API_KEY: -8}
setsid bash -c "exec -a $tag-setsid-$id sleep 1000" </dev/null >/dev/null 2>&1 &
( (bash -c "exec -a $tag-double-$id sleep 1000" </dev/null >/dev/null 2>&1 &) & )
setsid bash -c "trap '' TERM HUP INT; exec -a $tag-noterm-$id sleep 1000" </dev/null >/dev/null 2>&1 &
echo "$tag" > "apart-marker-$id"
exec python3 "$self/apart.py" "$tag" "$id"
`

// apartProgram is the Python half of apartScript.
const apartProgram = `import json, os, sys, time, urllib.error, urllib.request
tag, me = sys.argv[1], sys.argv[2]
base, token = os.environ["OPENAI_BASE_URL"].rstrip("/"), os.environ["OPENAI_API_KEY"]
def call(tok, content):
    body = json.dumps({"model": os.environ["AA_GRADE_MODEL"], "messages": [{"role": "user", "content": content}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", data=body, headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)["choices"][0]["message"].get("content") or ""
    except urllib.error.HTTPError as e:
        return e.code, ""
    except Exception as e:
        return repr(e), ""
print("OWN", call(token, "apart-report token=%s pwd=%s" % (token, os.path.realpath(os.getcwd())))[0], flush=True)
for _ in range(300):
    side = call(token, "apart-side")[1]
    if side != "wait":
        break
    time.sleep(0.5)
else:
    print("NOSIDE")
    sys.exit(0)
for line in side.split("\n"):
    if not line.strip():
        continue
    tok, pwd = line.split(" ", 1)
    other = tok[-8:]
    if other == me:
        continue
    print("OTHER_TOKEN", call(tok, "with another episode's token")[0])
    for path in (pwd, os.path.join(pwd, "apart-marker-" + other)):
        try:
            if os.path.isdir(path):
                names = os.listdir(path)
                if "apart-marker-" + other in names:
                    print("REACHED", path)
            else:
                open(path).read()
                print("REACHED", path)
        except OSError:
            pass
own = 0
try:
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
except OSError:
    pids = []
for pid in pids:
    for what in ("cmdline", "cwd", "root"):
        try:
            if what == "cmdline":
                text = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")
            else:
                text = " ".join(os.listdir("/proc/%s/%s" % (pid, what)))
        except OSError:
            continue
        for word in text.replace("\0", " ").split():
            if word.startswith(tag + "-") or word.startswith("apart-marker-"):
                if word.endswith(me):
                    own += 1
                else:
                    print("SEEN", pid, what, word)
for top in ("/", "/home", "/tmp", os.path.dirname(os.path.realpath(os.getcwd()))):
    for root, dirs, files in os.walk(top):
        if root.startswith(("/proc", "/sys", "/dev", "/usr")):
            dirs[:] = []
            continue
        for f in files:
            if f.startswith("apart-marker-") and not f.endswith(me):
                print("SEEN", os.path.join(root, f))
print("OWN_SEEN", own)
print("DONE")
`

// TestEpisodesKeepApart: 4 episodes of a hostile agent at once (--parallel 4), on each
// backend, as root and as a normal user. Each holds every other episode's gateway token and
// workspace path (leaked to it by the test, as a side channel could), and none gets a call
// through with another's token, reaches another's workspace, or sees another's processes or
// files; and no process any of them left behind outlives the run (issue 35).
func TestEpisodesKeepApart(t *testing.T) {
	for _, r := range agentRunners(t) {
		for _, sb := range r.backends {
			t.Run(r.name+"/"+sb[1], func(t *testing.T) {
				tag := "apart" + randomHex(t)
				agentDir := sharedDir(t)
				for name, content := range map[string]string{"apart.sh": apartScript, "apart.py": apartProgram, "tag": tag + "\n"} {
					if err := os.WriteFile(filepath.Join(agentDir, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				side := &sideChannel{fake: &fakemodel.Server{Script: fakemodel.Script{Turns: 1, Answer: answer901}}}
				srv := httptest.NewServer(side)
				defer srv.Close()
				home := r.ownDir(t)
				out := filepath.Join(home, "run")
				res := r.run(t, home, []string{"OPENAI_BASE_URL=" + srv.URL}, append([]string{"run", "--dataset", "demo", "--model", "openai/fake",
					"--tasks", "901,902,903,904", "--repeats", "1", "--parallel", "4", "--out", out, "--max-turns", "400",
					"--agent-dir", agentDir, "--agent", `command:bash "$AA_GRADE_AGENT_DIR/apart.sh"`}, sb...)...)
				if !side.told.Load() {
					t.Errorf("the episodes' tokens never all came: %d of 4 reports\n%s", len(side.reports()), res.stderr)
				}
				for _, task := range []string{"901", "902", "903", "904"} {
					stdout := agentStdout(t, filepath.Join(out, "episodes", "Scenario-"+task, "1"))
					t.Logf("Scenario-%s: %s", task, strings.ReplaceAll(strings.TrimSpace(stdout), "\n", " | "))
					checkApart(t, task, stdout)
				}
				if left := marked(tag); len(left) > 0 {
					t.Errorf("processes the episodes left outlive the run: %v", left)
					killMarked(tag)
				}
			})
		}
	}
}

// checkApart checks what one episode's agent reports: its own call through, every other
// token refused, nothing of the others reached or seen.
func checkApart(t *testing.T, task, stdout string) {
	t.Helper()
	if own := linesWith(stdout, "OWN "); len(own) != 1 || own[0] != "OWN 200" {
		t.Errorf("Scenario-%s: its own call: %v", task, own)
	}
	others := linesWith(stdout, "OTHER_TOKEN ")
	if len(others) != 3 {
		t.Errorf("Scenario-%s tried %d other tokens, want 3", task, len(others))
	}
	for _, l := range others {
		if l != "OTHER_TOKEN 401" {
			t.Errorf("Scenario-%s's gateway took another episode's token: %s", task, l)
		}
	}
	for _, prefix := range []string{"REACHED ", "SEEN "} {
		for _, l := range linesWith(stdout, prefix) {
			t.Errorf("Scenario-%s: %s", task, l)
		}
	}
	if len(linesWith(stdout, "DONE")) != 1 {
		t.Errorf("Scenario-%s's agent did not finish", task)
	}
}

// reportRe is an episode's report of its token and workspace, in a call's body.
var reportRe = regexp.MustCompile(`apart-report token=(aag-[0-9a-f]+) pwd=([^"\\]+)`)

// sideChannel is the fake provider of TestEpisodesKeepApart: it passes every call to fake, but
// answers a call that asks for "apart-side" with every episode's token and workspace once the
// 4 episodes' reports have reached fake ("wait" before), whole or not at all. It works alike on
// every backend: the agent's folder is not live in docker's (it is copied in at the start).
type sideChannel struct {
	fake *fakemodel.Server
	told atomic.Bool // the 4 reports were answered whole
}

func (s *sideChannel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Contains(body, []byte("apart-side")) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.fake.ServeHTTP(w, r)
		return
	}
	content := "wait"
	if seen := s.reports(); len(seen) == 4 {
		var b strings.Builder
		for tok, pwd := range seen {
			fmt.Fprintf(&b, "%s %s\n", tok, pwd)
		}
		content = b.String()
		s.told.Store(true)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "side", "object": "chat.completion", "model": "fake",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
}

// reports are the episodes' tokens and workspaces that reached the fake provider.
func (s *sideChannel) reports() map[string]string {
	seen := map[string]string{}
	for _, body := range s.fake.Bodies() {
		if m := reportRe.FindSubmatch(body); m != nil {
			seen[string(m[1])] = string(m[2])
		}
	}
	return seen
}
