package report

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/aa-grade/aa-grade/internal/version"
)

// parquetRow is one episode in results.parquet: flat columns of real types, so DuckDB,
// pandas or polars read it without a schema of ours. cost_usd is null when prices are unknown.
type parquetRow struct {
	Model             string   `parquet:"model,dict"`
	Task              string   `parquet:"task,dict"`
	Repeat            int64    `parquet:"repeat"`
	Status            string   `parquet:"status,dict"`
	Score             float64  `parquet:"score"`
	TP                int64    `parquet:"tp"`
	FP                int64    `parquet:"fp"`
	RootCauses        int64    `parquet:"root_causes"`
	RootCausesFound   int64    `parquet:"root_causes_found"`
	Turns             int64    `parquet:"turns"`
	ToolCalls         int64    `parquet:"tool_calls"`
	InputTokens       int64    `parquet:"input_tokens"`
	CachedReadTokens  int64    `parquet:"cached_read_tokens"`
	CachedWriteTokens int64    `parquet:"cached_write_tokens"`
	OutputTokens      int64    `parquet:"output_tokens"`
	ReasoningTokens   int64    `parquet:"reasoning_tokens"`
	CostUSD           *float64 `parquet:"cost_usd,optional"`
	DurationS         float64  `parquet:"duration_s"`
	ModelS            float64  `parquet:"model_s"`
	ToolS             float64  `parquet:"tool_s"`
	Error             string   `parquet:"error"`
	Matcher           string   `parquet:"matcher,dict"` // rules or judge: who mapped the entities
	// What a provider bills beside tokens, and what the gateway kept from it (issue 42), and
	// the calls retried: without them a reader of the file alone sees a cheaper, cleaner run.
	Retries              int64 `parquet:"retries"`
	WebSearches          int64 `parquet:"web_searches"`
	ServerTools          int64 `parquet:"server_tools"`
	ProviderToolsRefused int64 `parquet:"provider_tools_refused"`
	WorstCase            bool  `parquet:"worst_case"` // some tokens are a call's worst case, not its count
}

// WriteParquet writes the run's finished episodes as results.parquet, zstd-compressed.
func WriteParquet(w io.Writer, r *Run) error {
	rows := make([]parquetRow, 0, len(r.Results))
	for _, e := range r.Results {
		rows = append(rows, parquetRow{
			Model: r.Header.Model, Task: e.Task, Repeat: int64(e.Repeat), Status: e.Status, Score: e.Score,
			TP: int64(e.TP), FP: int64(e.FP), RootCauses: int64(e.RootCauses), RootCausesFound: int64(e.RootCausesFound),
			Turns: int64(e.Turns), ToolCalls: int64(e.ToolCalls),
			InputTokens: e.Tokens.Input, CachedReadTokens: e.Tokens.CachedRead, CachedWriteTokens: e.Tokens.CachedWrite,
			OutputTokens: e.Tokens.Output, ReasoningTokens: e.Tokens.Reasoning,
			CostUSD: e.CostUSD, DurationS: e.Duration, ModelS: e.ModelTime, ToolS: e.ToolTime, Error: e.Error,
			Matcher: e.Matcher, Retries: int64(e.Retries), WebSearches: e.Tokens.WebSearches, ServerTools: e.Tokens.ServerTools,
			ProviderToolsRefused: int64(e.ProviderTools), WorstCase: e.Tokens.WorstCase,
		})
	}
	if err := parquet.Write(w, rows, parquet.Compression(&parquet.Zstd), parquet.CreatedBy("aa-grade", version.Version,
		"")); err != nil {
		return fmt.Errorf("write results.parquet of %s: %w", r.Dir, err)
	}
	return nil
}
