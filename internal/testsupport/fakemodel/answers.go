package fakemodel

// GeminiAnswer is a generateContent answer of a thinking model: a thought, a text and a call
// without id, the signature on the call, as the API sends them. The Gemini provider's tests
// read it as a reply; the gateway's put it back together from its stream and find its call
// again in the history an agent sends back. Its parts are sent back as they came, spaces
// included, so its lines are left as the requests' golden files have them.
//
//nolint:lll
const GeminiAnswer = `{"candidates": [{"content": {"role": "model", "parts": [
  {"text": "The alerts point at cart.", "thought": true},
  {"text": "Let me check the events."},
  {"functionCall": {"name": "code_exec", "args": {"cmd": "grep -c Warning k8s_events_raw.tsv"}}, "thoughtSignature": "sig-abc=="}]},
  "finishReason": "STOP", "index": 0}],
 "usageMetadata": {"promptTokenCount": 4050, "cachedContentTokenCount": 3000, "candidatesTokenCount": 120, "thoughtsTokenCount": 40, "totalTokenCount": 4210},
 "modelVersion": "gemini-test", "responseId": "r1"}`
