//go:build unix

package agentrun_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
)

// oneCall is a command: agent whose whole work is one model call, so that its episode is the
// sandbox's start, the gateway's and one call through the relay.
const oneCall = `command:python3 -c 'import os, urllib.request
body = b"{\"model\": \"m1\", \"max_tokens\": 16, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"
urllib.request.urlopen(urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=body,
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"})).read()
open("agent_output.json", "w").write("[\"shop/Service/cart\"]")'`

// BenchmarkEpisodeStart sets an agent episode against its sandbox's start alone, per backend:
// BACKEND/sandbox is a sandbox with the relay and the gateway started, `true` run as the agent
// and closed; BACKEND/AGENT/episode a whole episode in a fresh sandbox (the gateway, the
// agent's start-up, its model calls through the relay to a scripted model that answers at
// once: one for command:, two and a command for the CLIs, to a graded answer; the CLI's version, asked once a run, left out); host/AGENT the
// same agent run straight on this machine against the model, with no sandbox or gateway: its
// own start-up and calls, which an episode should add to the sandbox's start and no more.
func BenchmarkEpisodeStart(b *testing.B) {
	fake := &fakecli.Server{Script: fakecli.Script{Command: `echo '["shop/Service/cart"]' > agent_output.json`, Final: "Done."}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for i, backend := range backends(b) {
		b.Run(backend.Name()+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				play(b, backend, agents.Agent{Name: "command", Command: "true"}, gateway.Messages, srv.URL, nil)
			}
		})
		for _, c := range []struct {
			spec     string
			protocol gateway.Protocol
			base     string
		}{{oneCall, gateway.Messages, ""}, {"claude-code", gateway.Messages, ""}, {"codex", gateway.Responses, "/v1"},
			{"gemini-cli", gateway.Gemini, ""}, {"opencode", gateway.Messages, ""}} {
			a, err := agents.Parse(c.spec)
			if err != nil {
				b.Fatal(err)
			}
			name := a.Name
			if program, _ := a.Program(); program != "" {
				if _, err := exec.LookPath(program); err != nil || agentrun.Supports(backend, a) != nil {
					continue
				}
			}
			if i == 0 {
				b.Run("host/"+name, func(b *testing.B) {
					for b.Loop() {
						onHost(b, a, srv.URL)
					}
				})
			}
			b.Run(backend.Name()+"/"+name+"/episode", func(b *testing.B) {
				_, install, err := agentrun.Version(context.Background(), backend, a) // once a run
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					out, rec := playWith(b, backend, a, install, c.protocol, srv.URL+c.base, func(e *agentrun.Episode) { e.Timeout = time.Minute })
					if out.Status != grader.StatusOK {
						b.Fatalf("outcome %+v (%v): %+v", out, out.Err, rec.ended)
					}
				}
			})
		}
	}
}

// onHost runs agent a as an episode launches it, with bash on this machine in a fresh folder,
// calling the model at base (the root the gateway would have) directly. Run as root, it runs
// the agent as nobody, as the sandbox does: root writes in the folders an adapter makes
// read-only, where opencode would then npm install its plugin package at every start.
func onHost(b *testing.B, a agents.Agent, base string) {
	dir, err := os.MkdirTemp("", "aa-grade-bench-") // b.TempDir's parent is closed to nobody
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l := a.Launch(agents.Episode{Prompt: "Investigate.", Model: "m1", Gateway: base, Token: "aag-bench"})
	cmd := exec.Command("bash", "-c", l.Script())
	cmd.Dir, cmd.Env = dir, append(sandbox.CleanEnv(dir), "TMPDIR="+dir)
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			b.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
}

// nobody is the user and group the host runs of the benchmark take when it runs as root.
const nobody = 65534
