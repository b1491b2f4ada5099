package atif

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/internal/safefile"
)

// LayoutFiles is one ATIF document, or a folder of them: what a harness that writes no
// folder per episode leaves.
const LayoutFiles = "*.json (ATIF documents)"

// FindDocuments finds the ATIF documents at path, for a reader that shows them rather than
// grades them: Find's layouts, else the document path is, else the .json files of the folder
// path (not its subfolders), each named by its file name, as repeat 1. It does not read the
// documents; Found.Episodes is empty when there are none.
func FindDocuments(path string) (Found, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Found{}, err
	}
	if !info.IsDir() {
		return Found{Layout: LayoutFiles, Episodes: []Episode{document(path)}}, nil
	}
	found, err := Find(path)
	if err != nil || len(found.Episodes) > 0 {
		return found, err
	}
	files, err := filepath.Glob(filepath.Join(path, "*.json"))
	if err != nil {
		return Found{}, err
	}
	slices.Sort(files)
	flat := Found{Layout: LayoutFiles, Problems: found.Problems}
	for _, f := range files {
		flat.Episodes = append(flat.Episodes, document(f))
	}
	return flat, nil
}

// document is a lone ATIF document as an episode: its file name stands for the task.
func document(path string) Episode {
	return Episode{Task: strings.TrimSuffix(filepath.Base(path), ".json"), Repeat: 1, Path: path}
}

// Outcome is what a Harbor trial's folder says of its end: the verifier's rewards by name
// ("reward" for most tasks) and the exception that stopped the trial, if any.
type Outcome struct {
	Rewards   map[string]float64
	Exception string
}

// TrialOutcome reads the outcome of the Harbor trial whose agent wrote the ATIF document at
// path (TRIAL/agent/trajectory.json): result.json's verifier_result and exception_info, else
// the reward the verifier wrote (verifier/reward.txt) while result.json is not written yet.
// A document that is no trial's has the zero Outcome.
func TrialOutcome(path string) (Outcome, error) {
	agentDir := filepath.Dir(path)
	if filepath.Base(agentDir) != "agent" {
		return Outcome{}, nil
	}
	dir := filepath.Dir(agentDir)
	var result struct {
		Verifier *struct {
			Rewards map[string]*float64 `json:"rewards"`
		} `json:"verifier_result"`
		Exception *struct {
			Type    string `json:"exception_type"`
			Message string `json:"exception_message"`
		} `json:"exception_info"`
	}
	if err := readJSON(filepath.Join(dir, "result.json"), &result); err != nil {
		return Outcome{}, err
	}
	var o Outcome
	if v := result.Verifier; v != nil {
		for name, r := range v.Rewards {
			if r != nil && !math.IsNaN(*r) {
				if o.Rewards == nil {
					o.Rewards = map[string]float64{}
				}
				o.Rewards[name] = *r
			}
		}
	}
	if e := result.Exception; e != nil {
		said := slices.DeleteFunc([]string{e.Type, e.Message}, func(s string) bool { return s == "" })
		o.Exception = strings.Join(said, ": ") // a type without a message, or the reverse, alone
	}
	if o.Rewards != nil {
		return o, nil
	}
	file := filepath.Join(dir, "verifier", "reward.txt")
	reward, err := safefile.ReadPath(file, maxTrialFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return o, nil
	case err != nil:
		return o, err
	}
	r, err := strconv.ParseFloat(strings.TrimSpace(string(reward)), 64)
	if err != nil || math.IsNaN(r) {
		return o, fmt.Errorf("%s: not a reward: %q", file, reward[:min(len(reward), 40)])
	}
	o.Rewards = map[string]float64{"reward": r}
	return o, nil
}
