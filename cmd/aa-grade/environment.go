package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// envVar is an environment variable aa-grade reads: one meaning, whichever command reads it.
type envVar struct {
	name    string
	flags   []string // the flags it sets, as "command --flag"; none for a variable no flag has
	meaning string
}

// environment is every AA_GRADE_ variable, the table docs/cli.md shows. A flag reads its
// variable through env, and TestEnvironmentTable checks that the commands read exactly these,
// so that a variable set for one command never steers another to something else.
var environment = []envVar{
	{"AA_GRADE_MODEL", []string{"run --model"}, "the model under test"},
	{"AA_GRADE_DATASET",
		[]string{"run --dataset", "grade --dataset", "analyze --dataset", "data pull --dataset", "data ls --dataset",
			"data verify --dataset", "repair --dataset"}, "the dataset"},
	{"AA_GRADE_TASKS", []string{"run --tasks", "grade --tasks", "data pull --tasks", "data verify --tasks"},
		"only these tasks"},
	{"AA_GRADE_LIMIT", []string{"run --limit"}, "only the first N tasks"},
	{"AA_GRADE_SAMPLE", []string{"run --sample"}, "only K tasks drawn at random"},
	{"AA_GRADE_SEED", []string{"run --seed"}, "the draw of --sample"},
	{"AA_GRADE_REPEATS", []string{"run --repeats", "grade --repeats"},
		"repeats of each task (run plays them, grade scores them)"},
	{"AA_GRADE_MAX_TURNS", []string{"run --max-turns"}, "model calls per episode"},
	{"AA_GRADE_PARALLEL", []string{"run --parallel"}, "episodes at once"},
	{"AA_GRADE_JUDGE_PARALLEL", []string{"grade --parallel"}, "judge calls at once"},
	{"AA_GRADE_PULL_PARALLEL", []string{"data pull --parallel"}, "files downloaded at once"},
	{"AA_GRADE_MAX_IN_FLIGHT", []string{"run --max-in-flight"}, "model calls at once"},
	{"AA_GRADE_RPM", []string{"run --rpm"}, "model requests per minute"},
	{"AA_GRADE_TPM", []string{"run --tpm"}, "model tokens per minute"},
	{"AA_GRADE_SANDBOX", []string{"run --sandbox", "doctor --sandbox", "tasks validate --sandbox"}, "the sandbox backend"},
	{"AA_GRADE_SANDBOX_IMAGE", []string{"run --sandbox-image", "doctor --sandbox-image"}, "the image an episode runs in"},
	{"AA_GRADE_MEMORY_LIMIT", []string{"run --memory-limit"}, "memory of an episode"},
	{"AA_GRADE_DISK_LIMIT", []string{"run --disk-limit"}, "disk of an episode"},
	{"AA_GRADE_OUT", []string{"run --out"}, "the run folder of aa-grade run"},
	{"AA_GRADE_COMMAND_TIMEOUT", []string{"run --command-timeout"}, "time a shell command may take"},
	{"AA_GRADE_REASONING_EFFORT", []string{"run --reasoning-effort"}, "the model's reasoning effort"},
	{"AA_GRADE_MAX_TOKENS", []string{"run --max-tokens"}, "output tokens per model call"},
	{"AA_GRADE_CONTEXT_WINDOW", []string{"run --context-window"}, "the model's context window (the lenient loop's)"},
	{"AA_GRADE_LOOP", []string{"run --loop"}, "the agent loop: reference or lenient"},
	{"AA_GRADE_AGENT", []string{"run --agent"}, "the agent that plays each episode in place of the loop (docs/agents.md)"},
	{"AA_GRADE_AGENT_TIMEOUT", []string{"run --agent-timeout"}, "how long an episode's agent may run"},
	{"AA_GRADE_AGENT_DIR", []string{"run --agent-dir"},
		"a folder of the agent's own files, shown read-only in the sandbox"},
	{"AA_GRADE_ALLOW_PROVIDER_TOOLS", []string{"run --allow-provider-tools"},
		"let an agent's model calls hold the provider's own tools (web search, fetch, MCP, code execution)"},
	{"AA_GRADE_SHARD", []string{"run --shard"}, "the part of the episodes to run"},
	{"AA_GRADE_GRACE", []string{"run --grace"}, "time running episodes may finish after Ctrl-C"},
	{"AA_GRADE_PRICE_INPUT", []string{"run --price-input"}, "USD per million input tokens"},
	{"AA_GRADE_PRICE_OUTPUT", []string{"run --price-output"}, "USD per million output tokens"},
	{"AA_GRADE_PRICE_CACHED_READ", []string{"run --price-cached-read"}, "USD per million cached input tokens read"},
	{"AA_GRADE_PRICE_CACHED_WRITE", []string{"run --price-cached-write"},
		"USD per million input tokens written to the cache"},
	{"AA_GRADE_MAX_COST", []string{"run --max-cost"}, "USD a run may spend"},
	{"AA_GRADE_MAX_RETRY_TIME", []string{"run --max-retry-time"},
		"how long one model call's transient failures are retried"},
	{"AA_GRADE_FAIL_ON_ERROR", []string{"run --fail-on-error"},
		"the episodes in error (a count, or a fraction of those planned) that stop a run"},
	{"AA_GRADE_PROMPTS", []string{"run --prompts", "prompts --prompts"}, "the prompt set file"},
	{"AA_GRADE_PROMPT_FILE", []string{"run --prompt-file", "prompts --prompt-file"}, "the task prompt file"},
	{"AA_GRADE_JUDGE", []string{"run --judge", "grade --judge"}, "the LLM judge"},
	{"AA_GRADE_JUDGE_EFFORT", []string{"run --judge-effort", "grade --judge-effort"}, "the judge's reasoning effort"},
	{"AA_GRADE_JUDGE_PROMPT", []string{"run --judge-prompt", "grade --judge-prompt"},
		"the judge's prompt file, instead of the built-in prompt"},
	{"AA_GRADE_JSON",
		[]string{"grade --json", "analyze --json", "models --json", "report --json", "data ls --json", "data verify --json",
			"tasks validate --json", "doctor --json"}, "print JSON instead of text"},
	{"AA_GRADE_HTML", []string{"report --html"}, "the HTML page aa-grade report writes"},
	{"AA_GRADE_REPAIR", []string{"data verify --repair"}, "download missing and corrupt files again"},
	{"AA_GRADE_NO_PROGRESS", []string{"run --no-progress", "data pull --no-progress"},
		"plain log lines instead of a live display"},
	{"AA_GRADE_VIEW_ADDR", []string{"view --addr"}, "where aa-grade view listens"},
	{"AA_GRADE_INSECURE_REGISTRIES", nil,
		"registries --sandbox-image may reach over plain HTTP (host:port, comma-separated)"},
	{"AA_GRADE_LINUX_GUEST", nil, "the Linux build of aa-grade the docker sandbox runs in its containers"},
	{"AA_GRADE_LINUX_AGENT", nil, "the older name of AA_GRADE_LINUX_GUEST, read when that one is not set"},
	{"AA_GRADE_GUEST_CONFINEMENT", nil, "set by aa-grade for the guest inside a sandbox; never set it yourself"},
}

// env is the environment variable source of a flag: AA_GRADE_ and name in upper case with
// dashes as underscores, which must be a variable of the environment table.
func env(name string) cli.ValueSourceChain {
	return cli.EnvVars(envName(name))
}

func envName(name string) string {
	return "AA_GRADE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// environmentMarkdown is the environment table as docs/cli.md shows it.
func environmentMarkdown() string {
	var b strings.Builder
	b.WriteString("| Variable | Meaning | Flags |\n|---|---|---|\n")
	for _, v := range environment {
		flags := "(no flag)"
		if len(v.flags) > 0 {
			flags = "`aa-grade " + strings.Join(v.flags, "`, `aa-grade ") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.name, v.meaning, flags)
	}
	return b.String()
}
