package runner

import (
	"context"
	"net/http"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// Episode is one episode of either kind, played to its end: aa-grade's loop
// (loop.Episode) or an agent in its sandbox (agentrun.Episode). runEpisode plays it without
// asking which.
type Episode interface {
	Run(ctx context.Context) loop.Outcome
}

var (
	_ Episode = (*loop.Episode)(nil)
	_ Episode = (*agentrun.Episode)(nil)
)

// A Player builds the episodes of a run: Loop, aa-grade's loop over a model, or *Agent, an
// agent calling the model through a gateway. The caller chooses one for the whole run
// (Config.Player), so that the choice is made once, where the episodes are built; the runner
// starts each episode's sandbox as the player asks and plays what it builds. Only this
// package's players satisfy it.
type Player interface {
	// prompts is the set the player's episodes show the model, which run.json records.
	prompts(set *promptset.Set) *promptset.Set
	// sandbox adds to spec what the player's episodes need of their sandbox.
	sandbox(spec *sandbox.Spec)
	// episode builds the episode played in sb (ctx is the one it will run under).
	episode(ctx context.Context, sb sandbox.Sandbox, seat seat) Episode
}

// seat is what the runner gives an episode of either kind: the run's settings (their prompt
// set as the player shows it), its sandbox's tools and its prices, and where the episode's
// calls are told.
type seat struct {
	settings settings.Settings
	tools    sandbox.Tools
	prices   *model.Prices
	// trajectory records the episode's turns (and an agent's end); wire hears each event of
	// its calls, charge each call's usage as it is answered, turned each turn's number and
	// the command its reply asked for, once recorded (for the live line).
	trajectory *runfolder.Trajectory
	wire       func(model.Event)
	charge     func(model.Usage)
	turned     func(turn int, command string)
}

// Loop plays each episode with aa-grade's loop (loop.Episode) over Model, the model under
// test, whose calls the loop makes itself.
type Loop struct {
	Model model.Model
}

func (Loop) prompts(set *promptset.Set) *promptset.Set { return set }

func (Loop) sandbox(*sandbox.Spec) {}

func (l Loop) episode(_ context.Context, sb sandbox.Sandbox, s seat) Episode {
	return &loop.Episode{Model: l.Model, Sandbox: sb, Tools: s.tools, Settings: s.settings,
		OnTurn: func(n int, req model.Request, reply model.Reply, err error) {
			s.trajectory.Turn(n, req, reply, err)
			s.charge(reply.Usage)
			s.turned(n, lastCommand(s.settings.Prompts.ShellToolName(), reply.Message))
		}}
}

// Agent plays each episode with an agent in its sandbox (agentrun.Episode), which reaches its
// model through a gateway each episode serves over its sandbox's relay, which holds the key
// and passes the calls on.
type Agent struct {
	Agent agents.Agent
	// Upstream is the run's provider as the agent's protocol calls it, key included; Model
	// the name the gateway allows and passes on.
	Upstream gateway.Upstream
	Model    string
	Timeout  time.Duration // an episode's agent's wall time (0: agentrun.DefaultTimeout)
	// RetryTime bounds the gateway's retries of one call (0: provider.DefaultRetryTime).
	RetryTime time.Duration
	Caps      gateway.Caps       // per episode; the calls' cap is MaxTurns
	Limit     *ratelimit.Limiter // the run's rate limiter, shared by the episodes' gateways
	HTTP      *http.Client       // nil: http.DefaultClient
	// Install is the host's install of a CLI the sandbox lacks, shown to every episode (nil:
	// the sandbox has it); Dir is the user's agent folder (run --agent-dir), "" for none.
	Install *agents.Install
	Dir     string
	// ProviderTools lets the agent's calls hold the tools a provider runs itself (run
	// --allow-provider-tools; gateway.Config.ProviderTools).
	ProviderTools bool
}

// prompts is the set with the agent task the agent is handed.
func (a *Agent) prompts(set *promptset.Set) *promptset.Set { return set.ForAgents() }

// sandbox adds the relay the gateway is served over, the host's CLI and the agent's folder.
func (a *Agent) sandbox(spec *sandbox.Spec) {
	spec.Relay, spec.Programs, spec.AgentDir = agentrun.Relay(), a.Install.Shown(), a.Dir
}

// episode builds the agent's episode: its model calls go through a gateway that records them
// with the seat's wire, each followed by its turn record as the loop's are.
func (a *Agent) episode(ctx context.Context, sb sandbox.Sandbox, s seat) Episode {
	return &agentrun.Episode{Agent: a.Agent, Sandbox: sb, Tools: s.tools, Settings: s.settings, Timeout: a.Timeout,
		Ended: s.trajectory.Agent, Install: a.Install,
		Gateway: gateway.Config{Model: a.Model, Upstream: a.Upstream, HTTP: a.HTTP, Limit: a.Limit, Prices: s.prices,
			Caps: a.Caps, ProviderTools: a.ProviderTools, Record: s.wire, Used: s.charge, RetryStop: provider.RetryStopOf(ctx),
			Budget: a.RetryTime,
			Turn: func(n int, req model.Request, reply model.Reply, err error) {
				s.trajectory.Turn(n, req, reply, err)
				s.turned(n, agents.Command(reply.Message))
			}}}
}
