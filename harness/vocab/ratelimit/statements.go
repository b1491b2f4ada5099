package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dimension is one thing a provider limits per minute.
type dimension int

const (
	requests     dimension = iota
	tokens                 // input and output together: OpenAI's tokens per minute, --tpm
	inputTokens            // Anthropic's input tokens per minute (cache reads left out)
	outputTokens           // Anthropic's output tokens per minute
	dimensions
)

// dimensionNames name the dimensions in run.json, the display and warnings.
var dimensionNames = [dimensions]string{"requests", "tokens", "input_tokens", "output_tokens"}

func (d dimension) String() string { return dimensionNames[d] }

// statement is what one answer's headers say about one of the provider's limits: its size a
// minute, what is left of it, and how long until it is whole again. Each is -1 when the
// answer does not state it, or states it so that it cannot be used (see statementProblem).
type statement struct {
	header    string // the limit's header, or the remaining's when no limit is stated
	limit     int64
	remaining int64
	reset     time.Duration
}

// stated reports whether the answer says anything about the limit.
func (s statement) stated() bool { return s.header != "" }

// statementProblem is a header that could not be used, for a warning.
type statementProblem struct {
	header, value string
	kind          problemKind
}

type problemKind int

const (
	notANumber problemKind = iota // a limit or remaining that is not a whole number
	zeroLimit                     // a limit of 0 (or below): some servers send it to mean "none"
	badReset                      // a reset that is neither a time nor a duration
	pastReset                     // a reset in the past
)

// dialect names the limit, remaining and reset headers of one provider for one dimension.
type dialect struct{ limit, remaining, reset string }

// dialects are, per dimension, the headers providers state limits in. OpenAI sends
// x-ratelimit-* with resets as durations ("6m0s", "1.5s", "120ms"), and OpenRouter and most
// OpenAI-compatible servers copy it; Anthropic sends anthropic-ratelimit-* with resets as RFC
// 3339 times. Either format is read from either name, so a proxy mixing them still reads.
var dialects = [dimensions][]dialect{
	requests: {{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"},
		{"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
			"anthropic-ratelimit-requests-reset"}},
	tokens: {{"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
		{"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"}},
	inputTokens: {{"anthropic-ratelimit-input-tokens-limit", "anthropic-ratelimit-input-tokens-remaining",
		"anthropic-ratelimit-input-tokens-reset"}},
	outputTokens: {{"anthropic-ratelimit-output-tokens-limit", "anthropic-ratelimit-output-tokens-remaining",
		"anthropic-ratelimit-output-tokens-reset"}},
}

// resetTolerance is how far in the past a reset may be and still read as "now": Anthropic
// states resets to the second, and clocks differ by a little.
const resetTolerance = 2 * time.Second

// readStatements reads what an answer's headers state about each limit, at now (the time
// the answer came). Anthropic's anthropic-ratelimit-tokens-* is the most restrictive of its
// input and output limits at the moment, not a limit on their sum, so it is left out when
// the answer states those two apart.
func readStatements(h http.Header, now time.Time) (st [dimensions]statement, problems []statementProblem) {
	for d := range dimensions {
		st[d] = statement{limit: -1, remaining: -1, reset: -1}
		for _, names := range dialects[d] {
			limit, remaining := h.Get(names.limit), h.Get(names.remaining)
			if limit == "" && remaining == "" {
				continue
			}
			s := &st[d]
			s.header = names.limit
			if limit == "" {
				s.header = names.remaining
			}
			var bad bool
			if limit != "" {
				switch n, err := strconv.ParseInt(strings.TrimSpace(limit), 10, 64); {
				case err != nil && !isOverflow(err):
					problems = append(problems, statementProblem{names.limit, limit, notANumber})
				case n <= 0:
					problems = append(problems, statementProblem{names.limit, limit, zeroLimit})
				default:
					s.limit = min(n, maxPerMinute) // a larger or overflowing limit is no limit worth pacing to
				}
			}
			if remaining != "" {
				if s.remaining, bad = parseCount(remaining); bad {
					problems = append(problems, statementProblem{names.remaining, remaining, notANumber})
				}
			}
			if reset := h.Get(names.reset); reset != "" {
				var kind problemKind
				if s.reset, kind, bad = parseReset(reset, now); bad {
					problems = append(problems, statementProblem{names.reset, reset, kind})
				}
			}
			break
		}
	}
	if st[inputTokens].stated() || st[outputTokens].stated() {
		if strings.HasPrefix(st[tokens].header, "anthropic-") {
			st[tokens] = statement{limit: -1, remaining: -1, reset: -1}
		}
	}
	return st, problems
}

// parseCount reads a remaining count: a whole number, 0 or more (above maxPerMinute counts as
// maxPerMinute); -1 and bad when it is not one.
func parseCount(v string) (n int64, bad bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case isOverflow(err) && n > 0:
		return maxPerMinute, false
	case err != nil || n < 0:
		return -1, true
	}
	return min(n, maxPerMinute), false
}

func isOverflow(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseReset reads a reset, at now: an RFC 3339 time (Anthropic), a Go duration (OpenAI:
// "6m0s", "1.5s", "120ms") or a number of seconds. It returns -1 and the problem when the
// reset is unreadable or lies in the past beyond resetTolerance; a reset further than a minute
// counts as a minute, since the limits are per minute.
func parseReset(v string, now time.Time) (time.Duration, problemKind, bool) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		d = t.Sub(now)
	} else if d, err = time.ParseDuration(v); err != nil {
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || s != s { // s != s: NaN
			return -1, badReset, true
		}
		d = time.Duration(min(max(s, -3600), 3600) * float64(time.Second))
	}
	if d < -resetTolerance {
		return -1, pastReset, true
	}
	return min(max(d, 0), time.Minute), 0, false
}
