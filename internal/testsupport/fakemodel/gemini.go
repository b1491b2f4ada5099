package fakemodel

import (
	"net/http"
)

// gemini answers a generateContent request by the script's turn: the call comes without id,
// as the API sends it.
func (s *Server) gemini(w http.ResponseWriter, body []byte, turn int) {
	name, args := s.Script.call(turn)
	finish := "STOP"
	if turn == s.Script.CutAt {
		finish = "MAX_TOKENS"
	}
	reply := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": finish, "content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"functionCall": map[string]any{"name": name, "args": args}}}}}},
		"usageMetadata": map[string]any{"promptTokenCount": len(body) / 4, "candidatesTokenCount": 20,
			"totalTokenCount": len(body)/4 + 20},
	}
	w.Header().Set("Content-Type", "application/json")
	sendJSON(w, reply)
}
