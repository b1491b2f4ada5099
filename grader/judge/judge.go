package judge

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/grader"
)

// Asker puts one question to a model and returns the text of its answer (models.Asker
// adapts a model to it).
type Asker interface {
	Ask(ctx context.Context, system, user string) (string, error)
}

// Judge is an LLM judge.
type Judge struct {
	// Model is the judge's model spec (openai/gpt-5.5): part of every cache key.
	Model string
	Asker Asker
	// Prompt is the user's prompt (--judge-prompt); nil: the built-in one.
	Prompt *Prompt
	// CacheDir holds one file per answered question; "" caches nothing. ReadDirs are caches
	// only read (a run folder's verdicts, when grade reads the run again).
	CacheDir string
	ReadDirs []string

	// The questions being asked: the repeats of a task often submit the same diagnosis at the
	// same time, and the same question is then asked once.
	mu       sync.Mutex
	inflight map[string]*question
}

// question is one call to the judge that others asking the same may wait for.
type question struct {
	done    chan struct{}
	mapping Mapping
	err     error
	waiters int
}

// Score is a grader.Scorer: the judge's mapping decides the score, with the rules' grade
// beside it. When the judge's call fails (after the provider's own retries) or its reply is
// malformed, the rules decide, with a note saying why. The error is only the context's.
func (j *Judge) Score(
	ctx context.Context,
	task grader.Task,
	gt *grader.GroundTruth,
	names []string,
) (grader.Verdict, error) {
	entities, _ := grader.DistinctEntities(names) // the verdict counts the rest
	if len(entities) == 0 {
		return gt.JudgeVerdict(names, nil, ""), nil // nothing to ask about
	}
	m, err := j.Map(ctx, task.GroundTruth, gt, entities)
	if err != nil {
		if ctx.Err() != nil {
			return grader.Verdict{}, ctx.Err()
		}
		return gt.RulesVerdict(names, "judge failed, the rules decided: "+err.Error()), nil
	}
	return gt.JudgeVerdict(names, m.Groups, strings.Join(m.Notes, "; ")), nil
}

// Map asks the judge which group each entity names, or takes the answer from the cache when
// the same question was asked before. groundTruth is the document gt was parsed from.
func (j *Judge) Map(
	ctx context.Context,
	groundTruth []byte,
	gt *grader.GroundTruth,
	entities []string,
) (Mapping, error) {
	system, user := SystemPrompt, userPrompt(gt, entities)
	if j.Prompt != nil {
		system, user = j.Prompt.render(groundTruth, gt, entities)
	}
	key := cacheKey(j.Model, groundTruth, entities, system, user)
	if reply, ok := j.cached(key); ok {
		if m, err := parseReply(reply, gt, entities); err == nil {
			return m, nil
		}
	}
	j.mu.Lock()
	if q, ok := j.inflight[key]; ok {
		q.waiters++
		j.mu.Unlock()
		select {
		case <-q.done:
			return q.mapping, q.err
		case <-ctx.Done():
			return Mapping{}, ctx.Err()
		}
	}
	q := &question{done: make(chan struct{})}
	if j.inflight == nil {
		j.inflight = map[string]*question{}
	}
	j.inflight[key] = q
	j.mu.Unlock()
	q.mapping, q.err = j.ask(ctx, key, system, user, gt, entities)
	j.mu.Lock()
	delete(j.inflight, key)
	j.mu.Unlock()
	close(q.done)
	return q.mapping, q.err
}

// ask puts the question to the model and caches a usable answer.
func (j *Judge) ask(
	ctx context.Context,
	key, system, user string,
	gt *grader.GroundTruth,
	entities []string,
) (Mapping, error) {
	reply, err := j.Asker.Ask(ctx, system, user)
	if err != nil {
		return Mapping{}, err
	}
	m, err := parseReply(reply, gt, entities)
	if err != nil {
		return Mapping{}, err
	}
	if err := j.store(key, reply); err != nil {
		m.Notes = append(m.Notes, fmt.Sprintf("answer not cached: %v", err))
	}
	return m, nil
}
