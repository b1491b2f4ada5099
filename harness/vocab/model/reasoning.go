package model

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// Reasoning reads the model's reasoning out of a reply's Opaque, whichever provider kept it
// there: Anthropic's thinking blocks, the Responses API's reasoning items (their summaries and
// any reasoning text), a Chat Completions server's reasoning_content, reasoning or
// reasoning_details, Gemini's thought parts. hidden says some reasoning came only encrypted or
// redacted, which no one can read (Gemini: a thought signature with no thought text).
func Reasoning(opaque json.RawMessage) (text string, hidden bool) {
	kept := gjson.ParseBytes(opaque)
	var parts []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	if kept.IsObject() { // Chat Completions: the reply's reasoning fields
		reasoning := kept.Get("reasoning_content").String()
		if reasoning == "" {
			reasoning = kept.Get("reasoning").String()
		}
		add(reasoning)
		kept.Get("reasoning_details").ForEach(func(_, d gjson.Result) bool {
			switch d.Get("type").String() {
			case "reasoning.text":
				if reasoning == "" {
					add(d.Get("text").String())
				}
			case "reasoning.summary":
				if reasoning == "" {
					add(d.Get("summary").String())
				}
			case "reasoning.encrypted":
				hidden = hidden || reasoning == ""
			}
			return true
		})
		return strings.Join(parts, "\n\n"), hidden
	}
	if thoughts := GeminiText(kept, true); thoughts != "" {
		add(thoughts)
	}
	kept.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "thinking": // Anthropic
			add(b.Get("thinking").String())
		case "redacted_thinking":
			hidden = true
		case "": // Gemini's parts have no type
			hidden = hidden || (b.Get("thoughtSignature").Exists() && len(parts) == 0)
		case "reasoning": // Responses
			n := len(parts)
			for _, field := range []string{"summary", "content"} {
				b.Get(field).ForEach(func(_, p gjson.Result) bool {
					add(p.Get("text").String())
					return true
				})
			}
			if len(parts) == n && b.Get("encrypted_content").String() != "" {
				hidden = true
			}
		}
		return true
	})
	return strings.Join(parts, "\n\n"), hidden
}

// GeminiText is the text of parts, joined as they come (the API cuts a text into parts
// anywhere): the thoughts' when thoughts is set, else the rest's. Reasoning reads Gemini's
// thoughts by it, and so do the Gemini provider its answers and the gateway its requests, so
// that the three read a text alike.
func GeminiText(parts gjson.Result, thoughts bool) string {
	var b strings.Builder
	parts.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Type == gjson.String && p.Get("thought").Bool() == thoughts {
			b.WriteString(t.Str)
		}
		return true
	})
	return b.String()
}
