package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// modelsOptions are the flags of aa-grade models.
type modelsOptions struct {
	flagsSet
	json bool
}

func (o *modelsOptions) Validate() error { return nil }

func newModelsCommand() *cli.Command {
	var opts modelsOptions
	return &cli.Command{
		Name:  "models",
		Usage: "list the model presets beside the published leaderboard rows they reproduce",
		Description: "A preset name is a --model value for aa-grade run. Prices are USD per million tokens.\n\n" +
			"Example: aa-grade models --json",
		Flags:  []cli.Flag{jsonFlag(&opts.json, "print JSON")},
		Action: action(&opts, runModels),
	}
}

// modelsOutput is `models --json`.
type modelsOutput struct {
	Presets   []presetRow    `json:"presets"`
	Published publishedNotes `json:"published"`
}

// presetRow is a preset with the published numbers of its leaderboard row.
type presetRow struct {
	provider.Preset
	Reasoning   string   `json:"reasoning"`
	Score       float64  `json:"published_score"`
	AvgTurns    *float64 `json:"published_avg_turns"`
	CostPerTask *float64 `json:"published_cost_per_task"`
}

type publishedNotes struct {
	Source string `json:"source"`
	Date   string `json:"date"`
	Tasks  int    `json:"tasks"`
	Note   string `json:"note"`
}

func runModels(_ context.Context, opts modelsOptions, args []string, con console) error {
	if err := noArgs("models", args); err != nil {
		return err
	}
	out, err := presetsOutput()
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(con.out, out)
	}
	renderModelsText(con.out, out, columns(con.out))
	return nil
}

// presetsOutput is every preset beside its published row.
func presetsOutput() (modelsOutput, error) {
	out := modelsOutput{
		Published: publishedNotes{Source: leaderboard.Source, Date: leaderboard.Date, Tasks: leaderboard.Tasks,
			Note: fmt.Sprintf(
				"The published runs used %d tasks; the public tasks are a subset of them, so a local run estimates, but cannot "+
					"equal, a published score.", leaderboard.Tasks)},
	}
	for _, p := range provider.Presets {
		row, ok := leaderboard.Find(p.Label)
		if !ok {
			return out, fmt.Errorf("preset %s: no published row %q", p.Name, p.Label)
		}
		out.Presets = append(out.Presets, presetRow{Preset: p, Reasoning: p.Reasoning(), Score: row.Score,
			AvgTurns: row.AvgTurns, CostPerTask: row.CostPerTask})
	}
	return out, nil
}

// renderModelsText prints one row per preset, then where its prices and the published
// numbers come from, fitted to a terminal cols wide (0: any width).
func renderModelsText(stdout io.Writer, out modelsOutput, cols int) {
	var w bytes.Buffer
	t := newTable("NAME", "SPEC", "REASONING", "CONTEXT", "MAX TOKENS", "PRICES IN/READ/WRITE/OUT", "SCORE", "TURNS",
		"$/TASK")
	for _, p := range out.Presets {
		t.row(p.Name, p.Spec, p.Reasoning, fmt.Sprint(p.ContextWindow), fmt.Sprint(p.MaxTokens), formatPrices(p.Prices),
			fmt.Sprintf("%.3f", p.Score), orDash(p.AvgTurns, 0), orDash(p.CostPerTask, 2))
	}
	t.write(&w, cols)
	fmt.Fprintln(&w)
	fmt.Fprintln(&w, "Prices in USD per million tokens (a cache price not published is the input price); unknown")
	fmt.Fprintln(&w, "prices leave the cost unknown, never zero, unless given with --price-* on aa-grade run:")
	for _, p := range out.Presets {
		if p.Prices == nil {
			continue
		}
		line := fmt.Sprintf("  %s: %s, %s", p.Name, p.PriceSource, p.PriceDate)
		if p.PriceNote != "" {
			line += "; " + p.PriceNote
		}
		fmt.Fprintln(&w, line)
	}
	fmt.Fprintf(&w, "Published numbers (score, turns, $/task): %s, %s.\n", out.Published.Source, out.Published.Date)
	fmt.Fprintln(&w, out.Published.Note)
	fmt.Fprintln(&w, "Model ids may need adjusting when a provider renames a model: give the PROVIDER/MODEL spec then.")
	fitText(stdout, w.String(), cols)
}

// formatPrices prints the prices a cost is computed with.
func formatPrices(p *model.Prices) string {
	if p == nil {
		return "unknown"
	}
	e := p.Effective()
	var parts []string
	for _, v := range []float64{e.Input, e.CachedRead, e.CachedWrite, e.Output} {
		parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64))
	}
	return strings.Join(parts, "/")
}

// orDash prints an unpublished figure as "-".
func orDash(v *float64, decimals int) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', decimals, 64)
}
