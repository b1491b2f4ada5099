package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/judge"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/english"
)

// judgeOptions are --judge, --judge-effort and --judge-prompt, on grade and run.
type judgeOptions struct {
	spec, effort, prompt string
}

func (o *judgeOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "judge", Destination: &o.spec, Sources: env("judge"),
			Usage: "map entities to ground-truth groups with this model as the LLM judge, as the official grading does " +
				"(" + provider.SpecForms() + ", or a preset; answers cached); the rules decide when it fails"},
		&cli.StringFlag{Name: "judge-effort", Destination: &o.effort, Sources: env("judge-effort"),
			DefaultText: "the preset's, else the provider's",
			Usage:       "the judge's reasoning effort (the official grading: openai/gpt-5.5 at medium)"},
		&cli.StringFlag{Name: "judge-prompt", Destination: &o.prompt, Sources: env("judge-prompt"),
			Usage: "the judge's prompt from this file instead of the built-in one: placeholders {{ground_truth}} or " +
				"{{groups}}, " +
				"{{entities}} or {{entities_json}}, {{aliases}}, {{entities_count}}; a line --- user --- parts the system " +
				"message from the user's " +
				"(docs/commands.md); its sha256 joins the judge's name"},
	}
}

// Validate refuses a judge that is no language model.
func (o *judgeOptions) Validate() error {
	if strings.HasPrefix(o.spec, "builtin/") || strings.HasPrefix(o.spec, "replay/") {
		return usageErrorf("--judge %s: the judge must be a language model", o.spec)
	}
	if o.prompt != "" && o.spec == "" {
		return usageErrorf("--judge-prompt needs --judge: the rules need no prompt")
	}
	return nil
}

// judgePrompt reads and checks --judge-prompt, before any call; nil for the built-in prompt.
func judgePrompt(path string) (*judge.Prompt, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--judge-prompt: %w", err)
	}
	p, err := judge.ParsePrompt(string(b))
	if err != nil {
		return nil, usageErrorf("--judge-prompt %s: %w", path, err)
	}
	return p, nil
}

// llmJudge is the judge with what it spends and what that costs.
type llmJudge struct {
	*judge.Judge
	asker  *models.Asker
	prices *model.Prices // nil: unknown
}

// newJudge builds the judge --judge and --judge-effort name, with its answers cached in
// $XDG_CACHE_HOME/aa-grade/judge; nil when --judge is empty. Its name, which keys the cache and
// goes in run.json, carries the effort, so answers at another effort are asked again.
func newJudge(o judgeOptions) (*llmJudge, error) {
	if o.spec == "" {
		return nil, nil
	}
	var overrides models.Overrides
	if o.effort != "" {
		overrides.ReasoningEffort = &o.effort
	}
	settings, err := models.Resolve(o.spec, overrides)
	if err != nil {
		return nil, modelSpecError("--judge", err)
	}
	if strings.HasPrefix(settings.Spec, "builtin/") {
		return nil, usageErrorf("--judge %s: the judge must be a language model", o.spec)
	}
	m, err := provider.New(settings.Spec, os.Getenv, provider.Options{Retry: provider.DefaultRetry,
		ReasoningEffort: settings.ReasoningEffort})
	if err != nil {
		return nil, fmt.Errorf("--judge: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("the judge's cache: %w", err)
	}
	name := settings.Spec
	if settings.ReasoningEffort != "" {
		name += " effort=" + settings.ReasoningEffort
	}
	prompt, err := judgePrompt(o.prompt)
	if err != nil {
		return nil, err
	}
	if prompt != nil {
		name += " prompt=sha256:" + prompt.SHA256
	}
	asker := &models.Asker{Model: m}
	return &llmJudge{
		Judge: &judge.Judge{Model: name, Asker: asker, Prompt: prompt, CacheDir: filepath.Join(cache, "aa-grade", "judge")},
		asker: asker, prices: settings.Prices}, nil
}

// spent says what the judge's calls of this command used: cached answers cost nothing.
func (j *llmJudge) spent() string {
	calls, used := j.asker.Spent()
	return fmt.Sprintf("judge: %s (cached answers are free), %s input and %s output tokens, %s",
		english.Count(calls, "call"), english.Number(used.Input), english.Number(used.Output),
		"cost "+report.FormatUSD(j.prices.Cost(used)))
}

// judgeLine is the text output's summary of the judge's work.
func judgeLine(j *grader.JudgeStats) string {
	line := fmt.Sprintf("Judge %s decided %s", j.Model, english.Count(j.Judged, "episode"))
	if j.Fallbacks > 0 {
		line += fmt.Sprintf(", the rules %d after it failed", j.Fallbacks)
	}
	if j.ScoreAgreement != nil {
		line += fmt.Sprintf("; the rules agree on %.1f%% of its scores", 100**j.ScoreAgreement)
		if j.EntityAgreement != nil {
			line += fmt.Sprintf(" and %.1f%% of its entities", 100**j.EntityAgreement)
		}
	}
	return line + fmt.Sprintf("; the rules alone score %.3f", j.RulesScore)
}

// judgeFallbacks is a warning about the episodes the rules graded because the judge failed,
// with the first failure's note; nil when there are none.
func judgeFallbacks(s grader.Summary) *grader.Problem {
	if s.Judge == nil || s.Judge.Fallbacks == 0 {
		return nil
	}
	for _, t := range s.PerTask {
		for _, e := range t.Episodes {
			if e.Status == grader.StatusOK && e.Matcher == grader.MatcherRules {
				return &grader.Problem{Level: "warning", Task: t.Task, Message: fmt.Sprintf(
					"the judge failed on %s, which the rules graded; first, %s repeat %d: %s",
					english.Count(s.Judge.Fallbacks, "episode"), t.Task, e.Repeat, e.JudgeNote)}
			}
		}
	}
	return nil
}

// judgeFailedEverywhere is an infrastructure failure (exit 3) when a judge was asked to grade
// and every call failed: the scores are the rules' alone, which is not what was asked for
// (the key, the endpoint or the model is wrong); nil otherwise.
func judgeFailedEverywhere(s grader.Summary) error {
	if s.Judge == nil || s.Judge.Judged > 0 || s.Judge.Fallbacks == 0 {
		return nil
	}
	return failure(fmt.Errorf("the judge failed on all %s (see the warning above): the scores are the rules' alone",
		english.Count(s.Judge.Fallbacks, "episode")))
}
