package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// agentOptions are the flags of an agent run: run --agent.
type agentOptions struct {
	spec     string
	timeout  time.Duration
	agentDir string
	// providerTools lets the agent's calls hold the tools a provider runs itself.
	providerTools bool
	agent         *agents.Agent // set by Validate; nil: aa-grade's loop plays the episodes
}

func (o *agentOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "agent", Destination: &o.spec, Sources: env("agent"), DefaultText: "aa-grade's loop",
			Usage: "the agent that plays each episode in its sandbox, calling the model through aa-grade's gateway: " +
				agents.Forms() + " (docs/agents.md)"},
		&cli.DurationFlag{Name: "agent-timeout", Value: agentrun.DefaultTimeout, Destination: &o.timeout,
			Sources: env("agent-timeout"), Usage: "how long an episode's agent may run, its model calls included"},
		&cli.StringFlag{Name: "agent-dir", Destination: &o.agentDir, Sources: env("agent-dir"), TakesFile: true,
			Usage: "a folder of your agent's files, shown read-only in every episode's sandbox at " +
				sandbox.AgentDirPath + " (landlock: at its own path), named by $" + agents.AgentDirVar},
		&cli.BoolFlag{Name: "allow-provider-tools", Destination: &o.providerTools, Sources: env("allow-provider-tools"),
			Usage: "let the agent's model calls hold the tools the provider runs itself (web search, web fetch, MCP, code " +
				"execution), which the gateway refuses otherwise; the run is then comparable with no other (docs/agents.md)"},
	}
}

// Validate reads --agent; the flags of aa-grade's own loop mean nothing beside it.
func (o *agentOptions) Validate(set func(string) bool) error {
	if o.spec == "" {
		for _, name := range []string{"agent-timeout", "agent-dir", "allow-provider-tools"} {
			if set(name) {
				return usageErrorf("--%s: only with --agent", name)
			}
		}
		return nil
	}
	a, err := agents.Parse(o.spec)
	if err != nil {
		return usageErrorf("--agent: %w", err)
	}
	if o.timeout <= 0 {
		return usageErrorf("--agent-timeout %s: must be more than 0", o.timeout)
	}
	for _, name := range []string{"loop", "context-window"} {
		if set(name) {
			return usageErrorf("--%s: aa-grade's loop plays no episode of an agent run (--agent)", name)
		}
	}
	if o.agentDir != "" {
		dir, err := filepath.Abs(o.agentDir)
		if err == nil {
			dir, err = filepath.EvalSymlinks(dir)
		}
		if err != nil {
			return usageErrorf("--agent-dir: %w", err)
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return usageErrorf("--agent-dir %s: not a folder", o.agentDir)
		}
		if err := sandbox.CheckShown(nil, dir); err != nil {
			return usageErrorf("--agent-dir: %w", err)
		}
		o.agentDir = dir
	}
	o.agent = &a
	return nil
}

// agentUpstream is where the gateway of an agent run passes its calls: the run's provider as
// the agent's protocol calls it; a model that runs the provider's tools for every call only
// when they are allowed.
func agentUpstream(a agents.Agent, spec string, m model.Model, providerTools bool) (gateway.Upstream, string, error) {
	if strings.HasPrefix(spec, "builtin/") || strings.HasPrefix(spec, "replay/") {
		return gateway.Upstream{}, "", usageErrorf(
			"--agent %s: the agent calls a provider's API, and --model %s is none (%s)", a, spec, provider.SpecForms())
	}
	up, name, err := gateway.UpstreamOf(m, a.Speaks())
	if err != nil {
		return gateway.Upstream{}, "", usageErrorf("--agent %s with --model %s: %w", a, spec, err)
	}
	if err := gateway.CheckModel(name, providerTools); err != nil {
		return gateway.Upstream{}, "", usageErrorf("--agent %s with --model %s: %w; --allow-provider-tools allows it", a,
			spec, err)
	}
	return up, name, nil
}

// withSearchPrice is prices with the price of the provider's web searches, which an agent
// run that allows the provider's tools pays beside the tokens (gateway.WebSearchPrice); prices
// as they are otherwise, or when unknown.
func withSearchPrice(prices *model.Prices, providerTools bool, p gateway.Protocol) *model.Prices {
	if !providerTools || prices == nil {
		return prices
	}
	with := *prices
	with.WebSearch = gateway.WebSearchPrice(p)
	return &with
}

// agentRun is the runner's configuration of an agent run, and what run.json says of it: the
// agent asked its version in the sandbox first, so that one missing says how to get it there.
func agentRun(
	ctx context.Context,
	o agentOptions,
	p *preparedRun,
	backend sandbox.Backend,
	maxTurns int,
) (*runner.Agent, *runfolder.AgentInfo, error) {
	a := *o.agent
	version, install, err := agentrun.Version(ctx, backend, a)
	if errors.Is(err, agentrun.ErrNotInstalled) {
		_, pkg := a.Program()
		return nil, nil, usageErrorf(
			"--agent: %w; install it: `npm install -g %s` on this machine (a sandbox that lacks it is shown "+
				"this machine's, read-only), or in the image of --sandbox-image", err, pkg)
	}
	if errors.Is(err, agentrun.ErrUnsupported) {
		return nil, nil, usageErrorf("--agent: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--agent: %w", err)
	}
	run := &runner.Agent{Agent: a, Upstream: p.agentUpstream, Model: p.agentModel, Timeout: o.timeout, Limit: p.limit,
		Install: install, Dir: o.agentDir, ProviderTools: o.providerTools}
	info := &runfolder.AgentInfo{Spec: a.String(), Version: version, Timeout: o.timeout.String(),
		Protocol: p.agentUpstream.Protocol.String(), Dir: o.agentDir, Install: install.Exe(), ProviderTools: o.providerTools}
	info.Command, info.Env = a.Settings(agents.Episode{Model: p.agentModel, Gateway: agentrun.GatewayURL,
		MaxTurns: maxTurns, Executable: install.Exe(), Protocol: p.agentUpstream.Protocol})
	return run, info, nil
}
