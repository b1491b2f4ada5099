package gateway

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// A call whose answer never says what it used (a stream cut before its usage, an agent that
// hung up, a provider that ignores stream_options, an answer with no usage object) was still
// billed by the provider: it counts at its worst case, never at 0, so that neither the caps nor
// the run's budget can be walked past by calls that report nothing.

// defaultWorstOutput is the output a call counts at when its request names no output cap: the
// largest output cap of the providers' current models (128,000 tokens: Claude Opus's, GPT-5's;
// Gemini's is 65,536).
const defaultWorstOutput = 128_000

// outputCaps are where a protocol's request names its output cap. Gemini's API takes a field
// by its JSON name or its proto name alike, so each spelling counts.
var outputCaps = [...][]string{
	Chat:      {"max_completion_tokens", "max_tokens"},
	Responses: {"max_output_tokens"},
	Messages:  {"max_tokens"},
	Gemini: {"generationConfig.maxOutputTokens", "generationConfig.max_output_tokens",
		"generation_config.maxOutputTokens", "generation_config.max_output_tokens"},
}

// worstCase is what a call of protocol p with this body may have cost at most, marked so, and
// how it was reckoned: as input, one token a byte of the body (a token stands for at least a
// byte of the text it encodes, so the body's length bounds its text's tokens); as output, the
// largest output cap the request names, else defaultWorstOutput.
func worstCase(p Protocol, body []byte) (model.Usage, string) {
	output, from := int64(0), ""
	for _, field := range outputCaps[p] {
		if v := gjson.GetBytes(body, field); v.Type == gjson.Number && v.Int() > output {
			output, from = v.Int(), "the request's "+field
		}
	}
	if output == 0 {
		output, from = defaultWorstOutput, fmt.Sprintf("the request names no %s: the largest cap of current models",
			strings.Join(outputCaps[p], " nor "))
	}
	u := model.Usage{Input: int64(len(body)), Output: output, WorstCase: true}
	return u, fmt.Sprintf(
		"counted at its worst case: %d input tokens (one a byte of the request's body) and %d output tokens (%s)", u.Input,
		u.Output, from)
}
