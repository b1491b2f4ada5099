package gateway_test

import (
	"errors"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestUpstreamOf: an agent's protocol picks how the run's provider is called; an agent and a
// model with no protocol in common are refused.
func TestUpstreamOf(t *testing.T) {
	chat := &provider.OpenAIChat{Options: provider.Options{BaseURL: "https://api.openai.com/v1",
		APIKey: "k1", Model: "gpt-x"}}
	responses := &provider.OpenAIResponses{Options: provider.Options{BaseURL: "https://api.openai.com/v1",
		APIKey: "k2", Model: "gpt-y"}}
	anthropic := &provider.Anthropic{Options: provider.Options{BaseURL: "https://api.anthropic.com",
		APIKey: "k3", Model: "claude-z"}}
	all := []gateway.Protocol{gateway.Chat, gateway.Responses, gateway.Messages}
	for _, c := range []struct {
		m      model.Model
		speaks []gateway.Protocol
		want   gateway.Upstream
		name   string
	}{
		{chat, all, gateway.Upstream{Protocol: gateway.Chat, BaseURL: "https://api.openai.com/v1", APIKey: "k1"}, "gpt-x"},
		{chat, []gateway.Protocol{gateway.Responses}, gateway.Upstream{Protocol: gateway.Responses, BaseURL: "https://api.openai.com/v1", APIKey: "k1"}, "gpt-x"},
		{responses, all, gateway.Upstream{Protocol: gateway.Responses, BaseURL: "https://api.openai.com/v1", APIKey: "k2"}, "gpt-y"},
		{anthropic, all, gateway.Upstream{Protocol: gateway.Messages, BaseURL: "https://api.anthropic.com", APIKey: "k3"}, "claude-z"},
	} {
		got, name, err := gateway.UpstreamOf(c.m, c.speaks)
		if err != nil {
			t.Errorf("UpstreamOf(%T, %v): %v", c.m, c.speaks, err)
			continue
		}
		if got != c.want || name != c.name {
			t.Errorf("UpstreamOf(%T, %v) = %+v, %q; want %+v, %q", c.m, c.speaks, got, name, c.want, c.name)
		}
	}
	if _, _, err := gateway.UpstreamOf(anthropic, []gateway.Protocol{gateway.Responses}); !errors.Is(err, gateway.ErrProtocol) {
		t.Errorf("codex on an Anthropic model: %v, want ErrProtocol", err)
	}
	if _, _, err := gateway.UpstreamOf(chat, []gateway.Protocol{gateway.Messages}); !errors.Is(err, gateway.ErrProtocol) {
		t.Errorf("claude-code on an OpenAI model: %v, want ErrProtocol", err)
	}
	if _, _, err := gateway.UpstreamOf(nil, all); err == nil {
		t.Error("a model that calls no provider was accepted")
	}
}
