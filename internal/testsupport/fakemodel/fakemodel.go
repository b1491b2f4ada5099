// Package fakemodel is a scripted model behind the OpenAI Chat Completions wire protocol (and
// Google's Gemini API, generateContent), for tests and benchmarks of whole runs: it needs no
// state, since the turn is the number of assistant messages in the conversation it is sent, so
// any number of episodes can share it.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Script is what every episode's model does: Turns-2 turns running Command, then a turn that
// writes Answer to agent_output.json, then a turn that calls finish.
type Script struct {
	Turns   int      // at least 2
	Command string   // the shell command of the investigation turns
	Answer  []string // the entities submitted
	// CutAt, when set, is the turn whose reply stops at the output cap (finish_reason length).
	CutAt int
}

// Server answers POST /chat/completions, and POST /v1beta/models/M:generateContent, by the
// script, and GET .../models (the models list a run checks first) with an empty list.
type Server struct {
	Script   Script
	requests atomic.Int64
	mu       sync.Mutex
	bodies   [][]byte // every request body received, in order
}

// Requests is how many calls the server has answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Bodies are the request bodies the server has received, in order: what a client sent.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") { // the check before a run
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"models":[]}`) // a failed write is the client's to see
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	type roled struct {
		Role string `json:"role"`
	}
	var req struct {
		Messages []roled `json:"messages"`
		Contents []roled `json:"contents"` // Gemini's
	}
	if err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	turn := 1 // the model's replies so far, and one
	for _, m := range append(req.Messages, req.Contents...) {
		if m.Role == "assistant" || m.Role == "model" {
			turn++
		}
	}
	if strings.HasSuffix(r.URL.Path, ":generateContent") {
		s.gemini(w, body, turn)
		return
	}
	name, args := s.Script.call(turn)
	argJSON, _ := json.Marshal(args)
	finish := "tool_calls"
	if turn == s.Script.CutAt {
		finish = "length"
	}
	reply := map[string]any{
		"id": fmt.Sprintf("fake-%d", turn), "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": map[string]any{
			"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", turn), "type": "function",
				"function": map[string]any{"name": name, "arguments": string(argJSON)}}},
		}}},
		"usage": map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": 20},
	}
	w.Header().Set("Content-Type", "application/json")
	sendJSON(w, reply)
}

// call is the tool call of a turn.
func (sc Script) call(turn int) (string, map[string]any) {
	turns := max(sc.Turns, 2)
	switch {
	case turn < turns-1:
		return "code_exec", map[string]any{"cmd": sc.Command}
	case turn == turns-1:
		var factors []map[string]string
		for _, e := range sc.Answer {
			factors = append(factors, map[string]string{"name": e, "reasoning": "scripted", "evidence": "scripted"})
		}
		doc, _ := json.Marshal(map[string]any{"contributing_factors": factors})
		return "code_exec", map[string]any{"cmd": "cat > agent_output.json <<'EOF'\n" + string(doc) + "\nEOF"}
	default:
		return "finish", map[string]any{"reason": "done", "paths": []string{"agent_output.json"}}
	}
}

// sendJSON writes v as the response's body; a write that fails is the client's under test to
// see.
func sendJSON(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }
