package main

import (
	"context"
	"fmt"
	"io"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/internal/english"
)

// guessedEpisodeBytes is the room an episode is expected to take on the disk when the folder
// holds none to measure: a guess on the high side, as a long episode's trajectory keeps every
// request's body whole until the episode ends and it is compressed.
const guessedEpisodeBytes = 8 << 20

// preflight checks, after the run folder is opened and before the first model call, what
// would otherwise fail only once episodes were played and paid for: every file and folder the
// run writes is writable; the disk has room for what the episodes will record (the folder's
// own mean on a resume, else guessedEpisodeBytes: a guess that only warns); the model's
// endpoint answers (its models list, which costs no token, provider.Checker). It says what it
// found on stderr for a run that calls a provider (the baseline's and a replay's episodes are
// small, and free: only a shortfall is said).
func (r *startedRun) preflight(ctx context.Context, stderr io.Writer, episodes int) error {
	folder := r.cfg.Folder
	if err := folder.CheckWritable(); err != nil {
		return fmt.Errorf("%w; nothing was played (make it writable, or give another --out)", err)
	}
	per, measured := folder.EpisodeBytes()
	source := fmt.Sprintf("the mean of the %s in the folder", english.Count(measured, "episode"))
	if measured == 0 {
		per, source = guessedEpisodeBytes, "a guess on the high side"
	}
	need := per * int64(episodes)
	free, err := diskFree(r.out) // the folder is there: opened and locked
	room := fmt.Sprintf("the episodes will record about %s (%s at %s each, %s); %s free", humanBytes(need),
		english.Count(episodes, "episode"), humanBytes(per), source, humanBytes(int64(free)))
	short := err == nil && uint64(need) > free
	c, callsProvider := r.model.(provider.Checker)
	switch {
	case short && measured > 0:
		return fmt.Errorf("disk: %s, too little: nothing was played (free some space, or give another --out)", room)
	case short:
		warnLine(stderr, "warning: disk: %s", room)
	case callsProvider:
		printLine(stderr, "disk: %s", room)
	}
	if !callsProvider {
		return nil
	}
	if err := c.Check(ctx); err != nil {
		return fmt.Errorf("the check of the model's endpoint before the first call: %w; nothing was played", err)
	}
	printLine(stderr, "endpoint: %s answered (its models list)", endpoint(r.model))
	return nil
}
