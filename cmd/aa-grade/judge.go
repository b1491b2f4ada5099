package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/judge"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
)

// judgeFlag is --judge, on grade and run.
func judgeFlag() cli.Flag {
	return &cli.StringFlag{Name: "judge", Sources: env("judge"),
		Usage: "map entities to ground-truth groups with this model as the LLM judge, as the official grading does " +
			"(openai/MODEL, anthropic/MODEL, ...; answers cached); the rules decide when it fails"}
}

// newJudge builds the judge a --judge value names, with its answers cached in
// $XDG_CACHE_HOME/aa-grade/judge; nil when the value is empty.
func newJudge(spec string) (*judge.Judge, error) {
	if spec == "" {
		return nil, nil
	}
	if strings.HasPrefix(spec, "builtin/") {
		return nil, usageErrorf("--judge %s: the judge must be a language model", spec)
	}
	m, err := model.New(spec, os.Getenv, model.Options{Retry: model.DefaultRetry})
	if err != nil {
		return nil, usageErrorf("--judge: %v", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("the judge's cache: %w", err)
	}
	return &judge.Judge{Model: spec, Asker: harness.Asker{Model: m}, CacheDir: filepath.Join(cache, "aa-grade", "judge")}, nil
}

// judgeLine is the text output's summary of the judge's work.
func judgeLine(j *grader.JudgeStats) string {
	line := fmt.Sprintf("Judge %s decided %d episodes", j.Model, j.Judged)
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
					"the judge failed on %d episodes, which the rules graded; first, %s repeat %d: %s", s.Judge.Fallbacks, t.Task, e.Repeat, e.JudgeNote)}
			}
		}
	}
	return nil
}
