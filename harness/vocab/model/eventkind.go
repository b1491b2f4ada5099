package model

// EventKind is the kind of a line of an episode's trajectory (docs/run-folder.md, and its
// schema harness/vocab/runfolder/trajectory.schema.json): every kind is here, so that the providers
// and the rate limiter that report events, the run folder that writes and reads them and the
// readers (the viewer, the analysis, replay) name them alike. All but KindTurn, KindUnsent and
// KindAgent are Events.
type EventKind string

const (
	// KindRequest is an HTTP request to the provider, raw: URL, Header (auth headers
	// redacted) and Body.
	KindRequest EventKind = "request"
	// KindResponse is its answer, raw: Status and Body, or Error when it could not be read.
	KindResponse EventKind = "response"
	// KindRetry is a call retried: its Attempt, after Wait, for Error.
	KindRetry EventKind = "retry"
	// KindThrottle is the rate limiter changing the calls allowed at once (MaxInFlight), on an
	// answer of Status.
	KindThrottle EventKind = "throttle"
	// KindQueued is a call held by the rate limiter, and why (Reason), for about Wait when
	// known: reported each time the reason changes (see ratelimit.Limiter.Acquire).
	KindQueued EventKind = "queued"
	// KindPaced is how long (Wait) the rate limiter held a call before it went.
	KindPaced EventKind = "paced"
	// KindNoUsage is an answer that reported no token counts (Error says so), so that the
	// zeros of the turn's usage read as unknown, not free.
	KindNoUsage EventKind = "no_usage"
	// KindStripped is what an agent's request held that the gateway took out before passing
	// it on (Error lists it): fields, tool keys and beta headers outside the allow-list of
	// what a function-calling request may hold (docs/agents.md).
	KindStripped EventKind = "stripped"
	// KindDivergence is a replayed call whose conversation left the recording (Error says
	// where).
	KindDivergence EventKind = "divergence"
	// KindTurn is one model call as the run folder records it after the call's events
	// (runfolder.TurnRecord): the messages new since the previous call, the reply, its usage.
	KindTurn EventKind = "turn"
	// KindUnsent is the messages an episode ended with that no model call sent
	// (runfolder.UnsentRecord): the results of its last turn's tool calls.
	KindUnsent EventKind = "unsent"
	// KindAgent is how the agent of an agent run (--agent) ended (runfolder.AgentRecord): its
	// exit status and the last of what it printed.
	KindAgent EventKind = "agent"
)
