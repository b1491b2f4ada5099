package validate

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// minRoleMatch is how alike two entities' roles must be for one to stand for the other: a
// copy's entities match their originals' at 0.9 and more, while two different services of
// one shop share their kind and a few neighbours at most.
const minRoleMatch = 0.3

// vector is an entity's role as a sparse vector over the features of every role compared,
// numbered (by roleIndex), in increasing order: two roles' cosine is then one merge.
type vector struct {
	namespace bool
	ids       []int32
	weights   []float64
}

// roleIndex numbers the features of roles.
type roleIndex map[string]int32

func (ix roleIndex) vectors(entities []entity) []vector {
	out := make([]vector, len(entities))
	for i, e := range entities {
		v := vector{namespace: e.namespace, ids: make([]int32, 0, len(e.role))}
		for f := range e.role {
			id, ok := ix[f]
			if !ok {
				id = int32(len(ix))
				ix[f] = id
			}
			v.ids = append(v.ids, id)
		}
		slices.Sort(v.ids)
		byID := make(map[int32]string, len(e.role))
		for f := range e.role {
			byID[ix[f]] = f
		}
		for _, id := range v.ids {
			v.weights = append(v.weights, e.role[byID[id]])
		}
		out[i] = v
	}
	return out
}

// roleSimilarity is the cosine similarity of two entities' roles (both of unit length), 0
// for a namespace and a service.
func roleSimilarity(a, b *vector) float64 {
	if a.namespace != b.namespace {
		return 0
	}
	var dot float64
	for i, j := 0, 0; i < len(a.ids) && j < len(b.ids); {
		switch {
		case a.ids[i] < b.ids[j]:
			i++
		case a.ids[i] > b.ids[j]:
			j++
		default:
			dot += a.weights[i] * b.weights[j]
			i++
			j++
		}
	}
	return dot
}

// matchEntities assigns to each of a's entities one of b's, or -1, so that the sum of their
// roles' similarities is the greatest (the Hungarian method), keeping only the pairs alike
// from minRoleMatch: an entity of a whose role is nowhere in b stands for none.
func matchEntities(a, b []vector) []int {
	out := make([]int, len(a))
	for i := range out {
		out[i] = -1
	}
	if len(a) == 0 || len(b) == 0 {
		return out
	}
	sim := make([][]float64, len(a))
	for i := range a {
		sim[i] = make([]float64, len(b))
		for j := range b {
			sim[i][j] = roleSimilarity(&a[i], &b[j])
		}
	}
	transposed := len(a) > len(b)
	rows, cols := len(a), len(b)
	if transposed {
		rows, cols = cols, rows
	}
	cost := func(i, j int) float64 {
		if transposed {
			return -sim[j][i]
		}
		return -sim[i][j]
	}
	for i, j := range assign(rows, cols, cost) {
		if transposed {
			i, j = j, i
		}
		if sim[i][j] >= minRoleMatch {
			out[i] = j
		}
	}
	return out
}

// assign solves the assignment problem for rows <= cols by the Hungarian method with
// potentials, in O(rows² cols): the column of each row, at the least total cost.
func assign(rows, cols int, cost func(i, j int) float64) map[int]int {
	u, v := make([]float64, rows+1), make([]float64, cols+1)
	p, way := make([]int, cols+1), make([]int, cols+1) // p[j]: the row (from 1) column j has
	for i := 1; i <= rows; i++ {
		p[0] = i
		j0 := 0
		minv := make([]float64, cols+1)
		used := make([]bool, cols+1)
		for j := range minv {
			minv[j] = math.Inf(1)
		}
		for p[j0] != 0 {
			used[j0] = true
			i0, delta, j1 := p[j0], math.Inf(1), 0
			for j := 1; j <= cols; j++ {
				if used[j] {
					continue
				}
				if c := cost(i0-1, j-1) - u[i0] - v[j]; c < minv[j] {
					minv[j], way[j] = c, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= cols; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	out := make(map[int]int, rows)
	for j := 1; j <= cols; j++ {
		if p[j] != 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}

// parsed is a feature split around its slots, so that it can be written again with the
// slots of the entities another task matched with them.
type parsed struct {
	key      string
	template string   // the slots without their indexes: what rarity is counted over
	pieces   []string // the text around the slots' indexes, one more than slots
	slots    []int
	weight   float64
}

func parse(key string, weight float64) parsed {
	p := parsed{key: key, weight: weight, template: key}
	var tmpl strings.Builder
	last, tlast := 0, 0
	for _, loc := range slotPattern.FindAllStringSubmatchIndex(key, -1) {
		i, _ := strconv.Atoi(key[loc[2]:loc[3]]) // the pattern is digits
		p.slots = append(p.slots, i)
		p.pieces = append(p.pieces, key[last:loc[2]])
		last = loc[3]
		tmpl.WriteString(key[tlast : loc[2]-1]) // up to the colon
		tmpl.WriteString("}")
		tlast = loc[1]
	}
	p.pieces = append(p.pieces, key[last:])
	if len(p.slots) > 0 {
		tmpl.WriteString(key[tlast:])
		p.template = tmpl.String()
	}
	return p
}

// padded is an entity's index in a slot: four digits, as many for every index.
func padded(i int) string {
	s := strconv.Itoa(i)
	if len(s) < 4 {
		s = strings.Repeat("0", 4-len(s)) + s
	}
	return s
}

// as writes the feature with each slot replaced by the entity to matches it with, and says
// false when an entity matches none.
func (p *parsed) as(to []int, b *strings.Builder) (string, bool) {
	if len(p.slots) == 0 {
		return p.key, true
	}
	b.Reset()
	for i, s := range p.slots {
		if s < 0 || s >= len(to) || to[s] < 0 {
			return "", false
		}
		b.WriteString(p.pieces[i])
		b.WriteString(padded(to[s]))
	}
	b.WriteString(p.pieces[len(p.slots)])
	return b.String(), true
}
