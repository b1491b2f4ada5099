package model

// Prices are a model's token prices in USD per million tokens. Cached reads and writes have
// their own prices where the provider charges differently; zero there means "as Input".
type Prices struct {
	Input       float64 `json:"input"`
	CachedRead  float64 `json:"cached_read,omitempty"`
	CachedWrite float64 `json:"cached_write,omitempty"`
	Output      float64 `json:"output"` // reasoning tokens are output tokens
	// WebSearch is the price of one web search the provider made (Usage.WebSearches), in USD;
	// zero: unknown. The uses of its other tools have no price here: unknown.
	WebSearch float64 `json:"web_search,omitempty"`
}

// Cost is what usage costs at these prices; nil prices mean the cost is unknown, and unknown
// is reported as nil, never as zero: so is the cost of a usage with a provider's tool uses
// whose price is not known.
func (p *Prices) Cost(u Usage) *float64 {
	if p == nil || u.ServerTools > 0 || (u.WebSearches > 0 && p.WebSearch == 0) {
		return nil
	}
	e := p.Effective()
	uncached := max(u.Input-u.CachedRead-u.CachedWrite, 0)
	usd := (float64(uncached)*e.Input + float64(u.CachedRead)*e.CachedRead +
		float64(u.CachedWrite)*e.CachedWrite + float64(u.Output)*e.Output) / 1e6
	usd += float64(u.WebSearches) * p.WebSearch
	return &usd
}

// Effective returns the prices a cost is computed with: a zero cache price is the input price.
func (p Prices) Effective() Prices {
	if p.CachedRead == 0 {
		p.CachedRead = p.Input
	}
	if p.CachedWrite == 0 {
		p.CachedWrite = p.Input
	}
	return p
}
