package models

import (
	"context"
	"fmt"
	"sync"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// Asker puts one question to a model, with no tools, and returns the text of its answer: how
// the LLM judge (grader/judge) uses a model without depending on the loop. It counts the
// calls and tokens it spends, so the judge's cost can be reported beside the run's.
type Asker struct {
	Model model.Model

	mu    sync.Mutex
	calls int
	used  model.Usage
}

// Ask sends a system and a user message and returns the reply's text; an empty system
// message is not sent (a judge prompt of the user's may have none).
func (a *Asker) Ask(ctx context.Context, system, user string) (string, error) {
	messages := []model.Message{{Role: model.RoleUser, Content: user}}
	if system != "" {
		messages = append([]model.Message{{Role: model.RoleSystem, Content: system}}, messages...)
	}
	reply, err := a.Model.Complete(ctx, model.Request{Messages: messages})
	a.mu.Lock()
	a.calls++
	a.used.Add(reply.Usage)
	a.mu.Unlock()
	if used, ok := ctx.Value(askedKey{}).(func(model.Usage)); ok {
		used(reply.Usage)
	}
	if err != nil {
		return "", fmt.Errorf("ask the model: %w", err)
	}
	return reply.Message.Content, nil
}

type askedKey struct{}

// WithAsked makes each question an Asker puts with ctx tell used its answer's usage, failed
// calls included: a run records the judge's calls in its ledger of spend, in the episode
// they grade, as they are answered.
func WithAsked(ctx context.Context, used func(model.Usage)) context.Context {
	return context.WithValue(ctx, askedKey{}, used)
}

// Spent is how many questions were asked and the tokens their answers used.
func (a *Asker) Spent() (calls int, used model.Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.used
}
