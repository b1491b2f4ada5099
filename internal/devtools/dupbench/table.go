package main

import (
	"fmt"
	"slices"

	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// row is the similarities of one kind of pair.
type row struct {
	name  string
	sims  []float64
	least validate.Pair // the least alike pair, and the most
	most  validate.Pair
}

func (r *row) add(p validate.Pair) {
	if len(r.sims) == 0 || p.Similarity < r.least.Similarity {
		r.least = p
	}
	if len(r.sims) == 0 || p.Similarity > r.most.Similarity {
		r.most = p
	}
	r.sims = append(r.sims, p.Similarity)
}

func printRows(rows []row) {
	fmt.Println("| pairs | count | at or above | below | least | median | most | least alike | most alike |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range rows {
		if len(r.sims) == 0 {
			fmt.Printf("| %s | 0 | | | | | | | |\n", r.name)
			continue
		}
		above := 0
		for _, s := range r.sims {
			if s >= validate.DuplicateThreshold {
				above++
			}
		}
		sorted := slices.Sorted(slices.Values(r.sims))
		fmt.Printf("| %s | %d | %d | %d | %.2f | %.2f | %.2f | %s ~ %s | %s ~ %s |\n", r.name, len(r.sims), above,
			len(r.sims)-above, sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1], r.least.Task, r.least.Of,
			r.most.Task, r.most.Of)
	}
}
