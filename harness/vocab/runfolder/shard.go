package runfolder

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of Count parts of a run (Index from 1), for running a benchmark on several
// machines; the zero value is the whole run.
type Shard struct {
	Index, Count int
}

// ErrShard marks a --shard value that is not I/N with 1 <= I <= N.
var ErrShard = errors.New("a shard is I/N with 1 <= I <= N")

// ParseShard reads "I/N"; "" is the whole run.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || count < 1 || index < 1 || index > count {
		return Shard{}, fmt.Errorf("%w: %q", ErrShard, s)
	}
	return Shard{index, count}, nil
}

func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Episodes lists the shard's episodes: every Count-th episode of the run in task x repeat
// order, starting at the Index-th. Dealing them out round-robin gives every shard nearly the
// same number of episodes and a mix of tasks, and depends only on the task list, so N
// machines given the same flags split the run exactly.
func (s Shard) Episodes(tasks []string, repeats int) []Episode {
	var out []Episode
	k := 0
	for _, t := range tasks {
		for r := 1; r <= repeats; r++ {
			if s.Count <= 1 || k%s.Count == s.Index-1 {
				out = append(out, Episode{Task: t, Repeat: r})
			}
			k++
		}
	}
	return out
}
