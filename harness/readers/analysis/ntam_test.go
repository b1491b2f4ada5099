package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
)

// ntamCases are testdata/ntam_cases.json: graphs, answers and the score SREGym's own
// ntam_score gave each (testdata/ntam_reference.py ran it, outside the project).
type ntamCases struct {
	Graphs map[string]struct {
		Edges    [][2]string `json:"edges"`
		Isolated []string    `json:"isolated"`
		Roots    []string    `json:"roots"`
	} `json:"graphs"`
	Cases []struct {
		Graph     string             `json:"graph"`
		Predicted []string           `json:"predicted"`
		Params    map[string]float64 `json:"params"`
		SREGym    float64            `json:"sregym_ntam"`
	} `json:"cases"`
}

// TestNTAMEqualsSREGym: on each fixed case, NTAM over the fault graph a ground truth's
// propagation steps make equals what SREGym's function gave for the same graph and answers.
func TestNTAMEqualsSREGym(t *testing.T) {
	b, err := os.ReadFile("testdata/ntam_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc ntamCases
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 10 {
		t.Fatalf("%d cases", len(doc.Cases))
	}
	for i, c := range doc.Cases {
		g := doc.Graphs[c.Graph]
		var nodes []string
		for _, e := range g.Edges {
			nodes = append(nodes, e[0], e[1])
		}
		nodes = append(nodes, g.Isolated...)
		slices.Sort(nodes)
		var yaml strings.Builder
		yaml.WriteString("groups:\n")
		for _, n := range slices.Compact(nodes) {
			fmt.Fprintf(&yaml, "  - {id: %s, kind: Service, namespace: shop, name: %s, root_cause: %v}\n", n, n, slices.Contains(g.Roots, n))
		}
		yaml.WriteString("propagations:\n")
		for _, e := range g.Edges {
			fmt.Fprintf(&yaml, "  - {source: %s, target: %s, condition: c, effect: e}\n", e[0], e[1])
		}
		gt, err := grader.ParseGroundTruth([]byte(yaml.String()))
		if err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, yaml.String())
		}
		var predictions []grader.Prediction
		for _, p := range c.Predicted {
			pred := grader.Prediction{Entity: "shop/Service/" + p}
			if p != "-" {
				id := p
				pred.Group, pred.RootCause = &id, slices.Contains(g.Roots, p)
			}
			predictions = append(predictions, pred)
		}
		params := DefaultNTAM
		if c.Params != nil {
			params = NTAMParams{Alpha: c.Params["alpha"], Omega: c.Params["omega"], Tau: c.Params["tau"], Gamma: c.Params["gamma"]}
		}
		if got := NewKey(gt, nil).NTAM(predictions, params); math.Abs(got-c.SREGym) > 1e-12 {
			t.Errorf("case %d (%s, %v): NTAM %v, SREGym %v", i, c.Graph, c.Predicted, got, c.SREGym)
		}
	}
}
