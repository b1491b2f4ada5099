package ratelimit

// Status is what a run's rate limiter knows and has done: the display shows it live, and
// the run's record keeps its JSON fields once the run is over.
type Status struct {
	Limits        []InForce `json:"limits,omitempty"` // the dimensions with a limit
	Calls         int64     `json:"calls"`            // answers received
	RateLimited   int64     `json:"rate_limited"`     // of them, 429s
	WaitedSeconds float64   `json:"waited_s"`         // time calls waited for the limiter, summed
	Waiting       int       `json:"-"`                // calls waiting now
	Warnings      []string  `json:"warnings,omitempty"`
}

// Idle reports a limiter that neither called a provider nor was given a limit, with nothing
// to show or record: a model that calls no provider (builtin/baseline, a replay).
func (s Status) Idle() bool { return s.Calls == 0 && len(s.Limits) == 0 }

// InForce is one dimension's limit, a minute.
type InForce struct {
	Name   string `json:"name"`             // requests, tokens, input_tokens or output_tokens
	Given  int64  `json:"given,omitempty"`  // by --rpm or --tpm
	Learnt int64  `json:"learnt,omitempty"` // as the provider's answers last stated it
	Used   int64  `json:"-"`                // charged in the last minute
}

// PerMinute is the limit in force: the lower of the one given and the one learnt (0 none).
func (f InForce) PerMinute() int64 {
	switch {
	case f.Given == 0:
		return f.Learnt
	case f.Learnt == 0:
		return f.Given
	}
	return min(f.Given, f.Learnt)
}
