package harness

import (
	"context"
	"fmt"
)

// Asker puts one question to a model, with no tools, and returns the text of its answer: how
// the LLM judge (grader/judge) uses a model without depending on this package.
type Asker struct {
	Model Model
}

// Ask sends a system and a user message and returns the reply's text.
func (a Asker) Ask(ctx context.Context, system, user string) (string, error) {
	reply, err := a.Model.Complete(ctx, Request{Messages: []Message{{Role: RoleSystem, Content: system}, {Role: RoleUser, Content: user}}})
	if err != nil {
		return "", fmt.Errorf("ask the model: %w", err)
	}
	return reply.Message.Content, nil
}
