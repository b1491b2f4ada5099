package viewer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// atifDocument is an ATIF document as another harness writes it (Harbor's terminus-2 here):
// the prompt, an agent step with reasoning, a tool call in keystrokes and its observation
// (one as a list of content parts, as v1.6 allows), per-step metrics and the final ones.
// Written from maps, not from aa-grade's types, so that only the format's field names tie the
// two.
func atifDocument(model, session, answer string) []byte {
	steps := []map[string]any{
		{"step_id": 1, "timestamp": "2026-05-01T09:00:00Z", "source": "system", "message": "You are an SRE agent."},
		{"step_id": 2, "timestamp": "2026-05-01T09:00:01Z", "source": "user", "message": "Diagnose the incident. " + hostile},
		{"step_id": 3, "timestamp": "2026-05-01T09:00:05Z", "source": "agent", "model_name": model,
			"message": "Looking at the pods first.", "reasoning_content": "The alerts name cart; its pods may restart. " + hostile,
			"tool_calls": []map[string]any{{"tool_call_id": "call_1", "function_name": "bash_command",
				"arguments": map[string]any{"keystrokes": "kubectl get pods -n otel-demo\n", "duration": 1.0}}},
			"observation": map[string]any{"results": []map[string]any{{"source_call_id": "call_1",
				"content": "cart-7d9f8b6c5-x2k4q   0/1   CrashLoopBackOff   " + hostile}}},
			"metrics": map[string]any{"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 1000, "cost_usd": 0.0021}},
		{"step_id": 4, "timestamp": "2026-05-01T09:00:09Z", "source": "agent", "model_name": model,
			"message":    answer,
			"tool_calls": []map[string]any{{"tool_call_id": "call_2", "function_name": "mark_task_complete", "arguments": map[string]any{}}},
			"observation": map[string]any{"results": []map[string]any{{"source_call_id": "call_2",
				"content": []map[string]any{{"type": "text", "text": "Task marked complete."}}}}},
			"metrics": map[string]any{"prompt_tokens": 1500, "completion_tokens": 40}},
	}
	doc := map[string]any{"schema_version": "ATIF-v1.5", "session_id": session,
		"agent": map[string]any{"name": "terminus-2", "version": "2.0.0", "model_name": model}, "steps": steps,
		"final_metrics": map[string]any{"total_prompt_tokens": 2700, "total_completion_tokens": 120,
			"total_cached_tokens": 1000, "total_cost_usd": 0.0031, "total_steps": 4}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// writeHarborJob writes a Harbor job folder: two trials of one task, the first verified (its
// reward in result.json), the second with only the reward its verifier wrote, beside the job's
// own config.json and result.json.
func writeHarborJob(t testing.TB, dir string) string {
	t.Helper()
	job := filepath.Join(dir, "jobs", "2026-05-01__09-00-00")
	testfs.Write(t, filepath.Join(job, "config.json"), `{"job_name": "2026-05-01__09-00-00", "n_attempts": 2}`)
	testfs.Write(t, filepath.Join(job, "result.json"), `{"id": "job", "n_total_trials": 2}`)
	for i, trial := range []string{"scenario-901__AbC12", "scenario-901__XyZ34"} {
		at := filepath.Join(job, trial)
		testfs.Write(t, filepath.Join(at, "agent", "trajectory.json"),
			string(atifDocument("openai/gpt-5", trial, `{"entities": [{"id": "otel-demo/ConfigMap/flagd-config"}]}`)))
		testfs.Write(t, filepath.Join(at, "config.json"), `{"task": {"path": "datasets/itbench/scenario-901"}}`)
		result := fmt.Sprintf(`{"task_name": "scenario-901", "trial_name": %q, "started_at": "2026-05-01T09:0%d:00Z"`, trial, i)
		if i == 0 {
			result += `, "verifier_result": {"rewards": {"reward": 1.0}}`
		} else {
			testfs.Write(t, filepath.Join(at, "verifier", "reward.txt"), "0.25\n")
		}
		testfs.Write(t, filepath.Join(at, "result.json"), result+"}")
	}
	return job
}

// writeATIFFolder writes a folder of ATIF documents as a harness without trial folders leaves
// them: two that read and one cut short.
func writeATIFFolder(t testing.TB, dir string) string {
	t.Helper()
	folder := filepath.Join(dir, "trajectories")
	testfs.Write(t, filepath.Join(folder, "episode-a.json"), string(atifDocument("anthropic/claude-opus-4-7", "a", "done")))
	testfs.Write(t, filepath.Join(folder, "episode-b.json"), string(atifDocument("anthropic/claude-opus-4-7", "b", "done")))
	testfs.Write(t, filepath.Join(folder, "episode-c.json"), `{"schema_version": "ATIF-v1.5", "steps": [`)
	return folder
}
