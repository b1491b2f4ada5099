package fakehub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// SampleDataset builds a dataset in the ITBench-AA Hub layout: sre/data.jsonl with one row
// per task (the six string fields), and per task a ground truth, an alerts file and one LFS
// TSV of lfsBytes pseudo-random bytes (deterministic for the task number).
func SampleDataset(tasks, lfsBytes int) map[string]File {
	files := map[string]File{}
	var index bytes.Buffer
	for i := 1; i <= tasks; i++ {
		id := fmt.Sprintf("Scenario-%d", i)
		gt := fmt.Sprintf(
			"groups:\n  - {id: %s-cm, kind: ConfigMap, namespace: otel-demo, name: flagd-config, root_cause: true}\n",
			strings.ToLower(id))
		row, _ := json.Marshal(map[string]string{
			"id_aa": "it-bench-sre-public-" + strings.ToLower(id), "scenario_id": id, "category": "sre",
			"source_split": "public", "scenario_root": "/home/user", "ground_truth_yaml": gt,
		})
		index.Write(row)
		index.WriteByte('\n')
		files["sre/"+id+"/ground_truth.yaml"] = File{Content: []byte(gt)}
		files["sre/"+id+"/alerts/alerts_at_2025-12-15T17-30-49.329092.json"] = File{
			Content: []byte(`[{"labels":{"alertname":"RequestErrorRate"}}]`)}
		files["sre/"+id+"/k8s_events_raw.tsv"] = File{Content: pseudoRandomText(uint64(i), lfsBytes), LFS: true}
	}
	files["sre/data.jsonl"] = File{Content: index.Bytes()}
	files["README.md"] = File{Content: []byte("# ITBench-AA (sample)\n")}
	return files
}

// ServeSample serves files as the main branch of repo and returns the commit. Called again for
// the same repo, it pushes a new commit: main moves to it and the earlier commits stay served.
func (h *Hub) ServeSample(repo string, files map[string]File) string {
	commit := Commit(files)
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[repo]
	if r == nil {
		r = &Repo{Name: repo, Refs: map[string]string{}, Commits: map[string]map[string]File{}}
		h.repos[repo] = r
	}
	r.Refs["main"] = commit
	r.Commits[commit] = files
	return commit
}

func pseudoRandomText(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return b
}
