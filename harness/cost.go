package harness

// Prices are a model's token prices in USD per million tokens. Cached reads and writes have
// their own prices where the provider charges differently; zero there means "as Input".
type Prices struct {
	Input       float64 `json:"input"`
	CachedRead  float64 `json:"cached_read,omitempty"`
	CachedWrite float64 `json:"cached_write,omitempty"`
	Output      float64 `json:"output"` // reasoning tokens are output tokens
}

// Cost is what usage costs at these prices; nil prices mean the cost is unknown, and unknown
// is reported as nil, never as zero.
func (p *Prices) Cost(u Usage) *float64 {
	if p == nil {
		return nil
	}
	or := func(v, fallback float64) float64 {
		if v == 0 {
			return fallback
		}
		return v
	}
	uncached := max(u.Input-u.CachedRead-u.CachedWrite, 0)
	usd := (float64(uncached)*p.Input + float64(u.CachedRead)*or(p.CachedRead, p.Input) +
		float64(u.CachedWrite)*or(p.CachedWrite, p.Input) + float64(u.Output)*p.Output) / 1e6
	return &usd
}
