package harness

import (
	"strings"
	"testing"
)

func TestTaskPromptCarriesTheContract(t *testing.T) {
	p := TaskPrompt(PromptFacts{Workdir: "/home/user", Python: map[string]string{"pandas": "1.5.3", "numpy": "1.24.2", "drain3": ""}})
	for _, want := range []string{
		"/home/user", "/home/user/agent_output.json", "numpy 1.24.2, pandas 1.5.3 (not installed: drain3)",
		"namespace/Kind/name", "No UIDs", `{"contributing_factors": [{"name": "namespace/Kind/name", "reasoning":`,
		"Irreducibility", "Downstream symptoms", "independently", "most specific object",
		"finish tool", "alerts", "metrics", "traces", "python and python3",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the task prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "{{") {
		t.Error("a placeholder was left unfilled")
	}
}

func TestPromptFileAndHash(t *testing.T) {
	custom := "Data in {{workdir}}; write {{output_path}}. Python: {{python_packages}}."
	got := FillPrompt(custom, PromptFacts{Workdir: "/tmp/ws", Python: map[string]string{"pandas": "3.0.3"}})
	if got != "Data in /tmp/ws; write /tmp/ws/agent_output.json. Python: pandas 3.0.3." {
		t.Fatalf("filled = %q", got)
	}
	a, b := PromptSHA256(SystemPrompt, DefaultTaskTemplate()), PromptSHA256(SystemPrompt, custom)
	if len(a) != 64 || a == b || a != PromptSHA256(SystemPrompt, DefaultTaskTemplate()) {
		t.Fatalf("hashes %s %s", a, b)
	}
}
