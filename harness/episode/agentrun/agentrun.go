// Package agentrun plays one episode of an agent run (aa-grade run --agent): the agent (a CLI
// or a program of the user's own) runs in the episode's sandbox in place of aa-grade's loop,
// and reaches the model only through a gateway served over the sandbox's relay, which holds
// the key. The episode ends when the agent does; its answer is agent_output.json, read as the
// loop reads it, or a diagnosis in the final message of a CLI that prints one.
package agentrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// GatewayPort is where the agent finds the gateway, on its sandbox's own 127.0.0.1.
const GatewayPort = 7480

// GatewayURL is the gateway's root as the agent calls it, inside its sandbox.
var GatewayURL = fmt.Sprintf("http://127.0.0.1:%d", GatewayPort)

// Relay is the relay an agent episode's sandbox must be started with.
func Relay() *sandbox.RelaySpec { return &sandbox.RelaySpec{Port: GatewayPort} }

// DefaultTimeout is how long an agent may run, its model calls included.
const DefaultTimeout = time.Hour

// Episode is one episode of an agent.
type Episode struct {
	Agent agents.Agent
	// Sandbox was started with Relay(); Tools are what its probe found (for the prompt).
	Sandbox sandbox.Sandbox
	Tools   sandbox.Tools
	// Settings are what the episode is played with: MaxTurns caps the model calls (0: none of
	// aa-grade's); CommandTimeout is what the prompt says a command may take (the agent runs
	// its commands itself); the prompt set's agent task is what the agent is told (its
	// built-in one when the set has none); the loop's own settings mean nothing here.
	settings.Settings
	Timeout time.Duration // the agent's wall time (0: DefaultTimeout)
	// Gateway is the episode's gateway but for its token, its caps on calls (MaxTurns) and
	// the background models the agent asks for, which Run fills.
	Gateway gateway.Config
	// Ended, when set, hears how the agent ended (for the trajectory).
	Ended func(runfolder.AgentRecord)
	// Install is the host's install of a CLI agent, shown to the sandbox (its Paths in the
	// sandbox's Spec.Programs) because its system lacks the CLI; nil: the CLI on its PATH.
	Install *agents.Install
}

// Run plays the episode: the outcome's Turns are the model calls the gateway passed on, its
// usage theirs, its ToolCalls the tool calls their replies made; the status says what the
// agent left (ok, missing, invalid) or why it ended without (error when it crashed, hung or
// could not start; max_turns when it ran out of calls; refused_limit when the gateway refused
// gateway.MaxRefusals of its requests, and it was stopped).
func (e *Episode) Run(ctx context.Context) loop.Outcome {
	var out loop.Outcome
	fail := func(err error) loop.Outcome {
		out.Status, out.Err = grader.StatusError, err
		return out
	}
	relay := sandbox.RelayOf(e.Sandbox)
	if relay == nil {
		return fail(errors.New("the sandbox was started without the agent's relay"))
	}
	token, err := newToken()
	if err != nil {
		return fail(err)
	}
	cfg := e.Gateway
	cfg.Token, cfg.Caps.Calls = token, e.MaxTurns
	// A provider's permanent refusal stops the agent at once: the episode ends in it, and the
	// run stops on it, rather than wait for the agent's own retries.
	ctx, refused := context.WithCancelCause(ctx)
	defer refused(nil)
	tell := cfg.Permanent
	cfg.Permanent = func(err error) {
		refused(err)
		if tell != nil {
			tell(err)
		}
	}
	var toolCalls atomic.Int64 // what the model's replies asked the agent to run
	turn := cfg.Turn
	cfg.Turn = func(n int, req model.Request, reply model.Reply, err error) {
		toolCalls.Add(int64(len(reply.Message.ToolCalls)))
		if turn != nil {
			turn(n, req, reply, err)
		}
	}
	cfg.Mapped = append(cfg.Mapped[:len(cfg.Mapped):len(cfg.Mapped)], e.Agent.BackgroundModels()...)
	// An agent whose requests the gateway refused too often is stopped at once: what it sends
	// after costs the host nothing more.
	agentCtx, stopAgent := context.WithCancelCause(ctx)
	defer stopAgent(nil)
	capped := cfg.Capped
	cfg.Capped = func(err error) {
		if errors.Is(err, gateway.ErrRefusals) {
			stopAgent(err)
		}
		if capped != nil {
			capped(err)
		}
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		return fail(err)
	}
	// The calls live no longer than the agent: an episode stopped (the run's budget spent,
	// Ctrl-C, the refusals' cap) passes no more calls on, and those in flight end, counted.
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return agentCtx }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		// http.ErrServerClosed once closed below; the relay's listener fails no other way
		// (its Accept ends only when it is closed).
		_ = srv.Serve(relay)
	}()
	defer func() {
		_ = srv.Close() // its error is the relay listener's Close, always nil
		<-served
	}()

	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	facts := promptset.Facts{Workdir: e.Sandbox.Workdir(), Commands: e.Tools.Commands, Python: e.Tools.Python,
		MaxTurns: e.MaxTurns, CommandTimeout: time.Duration(e.CommandTimeout)}
	texts := e.Prompts.ForAgents().ForEpisode(facts)
	launch := e.Agent.Launch(agents.Episode{Prompt: texts.AgentTask(), Model: cfg.Model,
		Gateway: GatewayURL, Token: token, MaxTurns: e.MaxTurns, Protocol: cfg.Upstream.Protocol,
		Executable: e.Install.Exe(), AgentDir: sandbox.AgentDirOf(e.Sandbox)})
	began := time.Now()
	res, runErr := e.Sandbox.Run(agentCtx, launch.Script(), timeout)
	stopServing(srv)
	rec := runfolder.AgentRecord{Agent: e.Agent.String(), ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		Duration: time.Since(began).Seconds(), Stdout: res.Stdout, Stderr: res.Stderr, StdoutChars: res.StdoutChars,
		StderrChars: res.StderrChars}
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	if e.Ended != nil {
		e.Ended(rec)
	}
	totals := gw.Totals()
	out.Turns, out.ToolCalls = totals.Calls, int(toolCalls.Load())
	out.Usage, out.ProviderTools = totals.Usage, totals.ProviderTools
	if totals.Permanent != nil {
		return fail(totals.Permanent)
	}
	if errors.Is(totals.Capped, gateway.ErrRefusals) {
		out.Status, out.Reason = grader.StatusRefusedLimit, fmt.Sprintf("the agent was stopped: %v", totals.Capped)
		return out
	}
	if runErr != nil {
		return fail(fmt.Errorf("run the agent: %w", runErr))
	}
	e.settle(ctx, &out, res, totals, timeout)
	return out
}

// callsEndWithin bounds the wait, once the agent ended, for the calls it left (their
// connections gone, they end as soon as they notice).
const callsEndWithin = 10 * time.Second

// stopServing takes no more calls, and waits for those being answered to end, so that their
// lines come before the agent's end and are not written beside it.
func stopServing(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), callsEndWithin)
	defer cancel()
	if srv.Shutdown(ctx) != nil {
		_ = srv.Close() // as in Run: the relay listener's Close, always nil
	}
}

// settle reads what the agent left: agent_output.json, else the diagnosis in its final
// message; without either, why it ended.
func (e *Episode) settle(
	ctx context.Context,
	out *loop.Outcome,
	res sandbox.Result,
	totals gateway.Totals,
	timeout time.Duration,
) {
	doc, sub, err := grader.ReadSubmissionWith(func(limit int64) ([]byte, error) {
		return e.Sandbox.ReadFile(ctx, grader.SubmissionFile, limit)
	})
	if errors.Is(err, fs.ErrNotExist) {
		if final := e.Agent.FinalMessage(res.Stdout); final != "" {
			if s, ferr := grader.ReadSubmission([]byte(final)); ferr == nil && len(s.Names) > 0 {
				doc, sub, err = []byte(final), s, nil
			}
		}
	}
	switch {
	case errors.Is(err, sandbox.ErrGuestDied):
		out.Status, out.Err = grader.StatusError, err
	case err == nil:
		out.Status, out.Submission, out.Entities = grader.StatusOK, doc, sub.Names
	case !errors.Is(err, fs.ErrNotExist):
		out.Status, out.Reason = grader.StatusInvalid, grader.SubmissionFile+": "+err.Error()
	case errors.Is(totals.Capped, gateway.ErrCap) && e.MaxTurns > 0 && totals.Calls >= e.MaxTurns:
		// Refused a call past the cap, the agent gave up or crashed: the model's outcome.
		out.Status, out.Reason = grader.StatusMaxTurns, fmt.Sprintf(
			"the agent made its %d model calls with no answer (exit status %d)", totals.Calls, res.ExitCode)
	case res.TimedOut:
		out.Status, out.Err = grader.StatusError, fmt.Errorf("the agent ran past its wall time of %s with no answer", timeout)
	case res.ExitCode != 0:
		out.Status, out.Err = grader.StatusError, fmt.Errorf("the agent exited with status %d with no answer", res.ExitCode)
	default:
		out.Status, out.Reason = grader.StatusMissing,
			"the agent ended with no "+grader.SubmissionFile+" and no answer in its final message"
		if totals.Capped != nil {
			out.Reason += " (" + totals.Capped.Error() + ")"
		}
	}
}

// newToken is an episode's token: 128 random bits, never reused.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw the episode's token: %w", err)
	}
	return "aag-" + hex.EncodeToString(b), nil
}

// ErrUnsupported marks an agent that cannot run in a backend.
var ErrUnsupported = errors.New("the agent cannot run in this sandbox")

// Supports says whether agent a can run in backend b: Claude Code and opencode need /proc of
// their own process, which the landlock sandbox keeps out of reach (it shows the host's /proc,
// which no Landlock rule can open for a process's own folder only); a program of the user's
// own, Codex (its native program) and the Gemini CLI (on Node.js, with an OpenSSL
// configuration of its own) run in every isolating backend that relays.
func Supports(b sandbox.Backend, a agents.Agent) error {
	if a.NeedsProc() && b.Name() == sandbox.NameLandlock {
		return fmt.Errorf(
			"%w: %s needs /proc/self, which the landlock sandbox keeps out of reach; use the bwrap or docker sandbox",
			ErrUnsupported, a)
	}
	return nil
}

// ErrNotInstalled marks an agent whose program neither the sandbox nor this machine has.
var ErrNotInstalled = errors.New("the agent is not installed in the sandbox")

// Version asks the agent its version in an empty sandbox of b, before a run: what it printed
// ("" for a program of the user's own, which has no version command). A CLI the sandbox's
// system lacks (an image without it) is taken from this machine, its install shown read-only
// (install, for every episode's sandbox); one neither has is ErrNotInstalled, naming the
// program and its npm package.
func Version(
	ctx context.Context,
	b sandbox.Backend,
	a agents.Agent,
) (version string, install *agents.Install, err error) {
	if err := Supports(b, a); err != nil {
		return "", nil, err
	}
	if a.VersionCommand("") == "" {
		return "", nil, nil
	}
	if b.Name() == sandbox.NameLandlock {
		// Landlock shows this machine's system, where a CLI's launcher may need what it keeps
		// out of reach (Node.js reads /etc/ssl): the native program is run there.
		if in, ierr := a.HostInstall(); ierr == nil {
			install = &in
		}
	}
	res, err := askVersion(ctx, b, a, install)
	if err == nil && res.ExitCode == 127 && install == nil {
		if in, ierr := a.HostInstall(); ierr == nil {
			install = &in
			res, err = askVersion(ctx, b, a, install)
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("ask %s its version: %w", a, err)
	}
	program, pkg := a.Program()
	switch {
	case res.ExitCode == 127:
		return "", nil, fmt.Errorf("%w: %s (npm package %s) is not on the %s sandbox's PATH, nor on this machine's",
			ErrNotInstalled, program, pkg, b.Name())
	case res.ExitCode != 0 || res.TimedOut:
		return "", nil, fmt.Errorf("%s: exit status %d: %s", a.VersionCommand(install.Exe()), res.ExitCode,
			firstLine(res.Stderr+res.Stdout))
	}
	return firstLine(res.Stdout), install, nil
}

// askVersion runs the agent's version command in an empty sandbox showing install.
func askVersion(
	ctx context.Context,
	b sandbox.Backend,
	a agents.Agent,
	install *agents.Install,
) (sandbox.Result, error) {
	return sandbox.RunEmpty(ctx, b, a.VersionCommand(install.Exe()), time.Minute, install.Shown())
}

// firstLine is the first line of s that is not blank, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
