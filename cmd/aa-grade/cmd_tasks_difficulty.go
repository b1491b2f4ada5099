package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/models/baseline"
	"github.com/aa-grade/aa-grade/snapshot/synth/naive"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// baselineTimeout bounds builtin/baseline's investigation of one task (a few seconds on real
// sizes; the shell tool's own default).
const baselineTimeout = 5 * time.Minute

// addDifficulty runs the naive solvers and builtin/baseline (in a sandbox of backendName, as
// an episode would) on every task with a folder, and adds how each did to its report.
func addDifficulty(ctx context.Context, reports []validate.Report, tasks []data.Task, backendName string) error {
	backend, err := sandbox.Select(backendName)
	if err != nil {
		return isolationHint(fmt.Errorf("--sandbox: %w", err))
	}
	defer sandbox.Release(backend)
	for i, t := range tasks {
		if t.Dir == "" {
			continue
		}
		attempts := append(validate.NaiveAttempts(t.Dir), baselineAttempt(ctx, backend, t))
		if ctx.Err() != nil {
			return interrupted(fmt.Errorf("interrupted: %w", ctx.Err()))
		}
		validate.AddDifficulty(&reports[i], t.GroundTruth, attempts)
	}
	return nil
}

// baselineAttempt runs builtin/baseline's investigation on the task in a sandbox of its own
// and reads its answer, each entity with the reasons it gave.
func baselineAttempt(ctx context.Context, backend sandbox.Backend, t data.Task) validate.Attempt {
	a := validate.Attempt{Solver: models.BaselineSpec}
	scratch, remove, err := sandbox.NewScratch()
	if err != nil {
		a.Err = err
		return a
	}
	defer remove()
	sb, err := backend.Start(ctx, sandbox.Spec{Snapshot: t.Dir, Hide: []string{data.GroundTruthFile}, Scratch: scratch})
	if err != nil {
		a.Err = fmt.Errorf("start a sandbox: %w", err)
		return a
	}
	defer func() { _ = sb.Close() }() // best effort: the probe's answer is read, the sandbox is done with
	res, err := sb.Run(ctx, baseline.InvestigationCommand, baselineTimeout)
	switch {
	case err != nil:
		a.Err = err
		return a
	case res.ExitCode != 0:
		a.Err = fmt.Errorf("the investigation exited %d: %s", res.ExitCode, lastStderrLine(res.Stderr))
		return a
	}
	factors, err := baseline.Diagnose(res.Stdout)
	if err != nil {
		a.Err = err
		return a
	}
	for _, f := range factors {
		a.Answer = append(a.Answer, naive.Answer{Entity: f.Entity, Evidence: f.Why})
	}
	return a
}

// lastStderrLine is the last line of a command's stderr: where Python says what went wrong.
func lastStderrLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
