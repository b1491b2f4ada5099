package model

import (
	"math"
	"testing"
)

func TestCost(t *testing.T) {
	u := Usage{Input: 1_000_000, CachedRead: 400_000, CachedWrite: 100_000, Output: 200_000, Reasoning: 150_000}
	cases := []struct {
		name   string
		prices *Prices
		want   float64
	}{
		// 0.5M uncached x 5 + 0.4M x 0.5 + 0.1M x 6.25 + 0.2M x 25 (reasoning is inside output)
		{"cache prices", &Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6.25, Output: 25}, 2.5 + 0.2 + 0.625 + 5},
		{"cache at input price", &Prices{Input: 2, Output: 8}, 2 + 1.6},
		{"free local model", &Prices{}, 0},
	}
	for _, c := range cases {
		got := c.prices.Cost(u)
		if got == nil || math.Abs(*got-c.want) > 1e-9 {
			t.Errorf("%s: cost %v, want %v", c.name, got, c.want)
		}
	}
	var unknown *Prices
	if got := unknown.Cost(u); got != nil {
		t.Errorf("unknown prices cost %v, want nil (unknown, not zero)", *got)
	}
}
