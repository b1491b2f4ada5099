package model

import "net/http"

// Test helpers exported to package model_test, whose episode tests import package loop
// (which imports this package).
var (
	NewAnthropicAPI  = newAnthropicAPI
	AnthropicReply   = anthropicReply
	NewTestAnthropic = newAnthropic
)

// Append queues more answers.
func (a *anthropicAPI) Append(answers ...func(http.ResponseWriter)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = append(a.answers, answers...)
}

// Refused returns the refusals sent so far.
func (a *anthropicAPI) Refused() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.refused...)
}
