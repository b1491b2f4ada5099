package runfolder

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
)

// Selection is which of the tasks asked for a run plays: the first Limit, or a random Sample
// of them drawn with Seed; the zero value is them all. run.json records it, and a resume or a
// merge with another is refused, as for the task list it gives.
type Selection struct {
	Limit  int   `json:"limit,omitempty"`
	Sample int   `json:"sample,omitempty"`
	Seed   int64 `json:"seed,omitempty"`
}

// Apply is the selected ids, in the order given. A sample ranks each id by a hash of the seed
// and the id alone, not by a generator's sequence: the same seed picks the same tasks on any
// machine and Go version, whatever order the ids come in, and a task picked stays picked,
// ahead of the same tasks, when the dataset grows.
func (s Selection) Apply(ids []string) []string {
	switch {
	case s.Sample > 0 && s.Sample < len(ids):
		ranked := slices.Clone(ids)
		slices.SortStableFunc(ranked, func(a, b string) int { return cmp.Compare(s.rank(a), s.rank(b)) })
		picked := ranked[:s.Sample]
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !slices.Contains(picked, id) })
	case s.Limit > 0 && s.Limit < len(ids):
		return slices.Clone(ids[:s.Limit])
	}
	return slices.Clone(ids)
}

// rank is id's place in the sample's draw: the first 8 bytes of sha256("seed/id").
func (s Selection) rank(id string) uint64 {
	sum := sha256.Sum256([]byte(strconv.FormatInt(s.Seed, 10) + "/" + id))
	return binary.BigEndian.Uint64(sum[:8])
}
