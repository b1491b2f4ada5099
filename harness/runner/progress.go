package runner

import (
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// Event is something a run tells as it goes (Config.Progress): one of the types below. The
// command renders them; the runner only tells.
type Event interface{ runEvent() }

// Planned tells how many episodes the run (or shard) has, which are already finished, and what
// the folder spent before (its ledger's sum).
type Planned struct {
	Total    int
	Finished []runfolder.Result
	Spent    runfolder.Spend
}

// EpisodeStarted tells an episode began: it runs until EpisodeFinished, its waits included.
type EpisodeStarted struct{ Episode runfolder.Episode }

// EpisodeTurn tells an episode made a model call: Command is the last shell command it asked
// for, if any ("" on the turn it starts).
type EpisodeTurn struct {
	Episode        runfolder.Episode
	Turn, MaxTurns int
	Command        string
}

// EpisodeWaiting tells an episode's model call waits (a zero Wait: it waits no more).
type EpisodeWaiting struct {
	Episode runfolder.Episode
	Wait    Wait
}

// EpisodeFinished tells an episode ended, and its result was recorded.
type EpisodeFinished struct{ Result runfolder.Result }

// Interrupted tells the run was interrupted: no more episodes start, and the running ones
// have Grace to finish.
type Interrupted struct{ Grace time.Duration }

// Stopping tells the running episodes are stopped now, and why.
type Stopping struct{ Why string }

// TrajectoryPlain: an episode's trajectory could not be compressed, and stays as the plain
// file beside it, which every reader reads as well; a full disk, most likely, to be told.
type TrajectoryPlain struct {
	Episode runfolder.Episode
	Err     error
}

func (Planned) runEvent()         {}
func (EpisodeStarted) runEvent()  {}
func (EpisodeTurn) runEvent()     {}
func (EpisodeWaiting) runEvent()  {}
func (EpisodeFinished) runEvent() {}
func (Interrupted) runEvent()     {}
func (Stopping) runEvent()        {}
func (TrajectoryPlain) runEvent() {}

// tell hands e to the run's progress, if any.
func (cfg Config) tell(e Event) {
	if cfg.Progress != nil {
		cfg.Progress(e)
	}
}

// Wait is a pause of a model call: before a retry, or held by the rate limiter.
type Wait struct {
	Retry   bool   // a retry: the Attempt that failed, and why (Reason)
	Attempt int    // retry only
	Reason  string // the failure retried, or what the rate limiter waits for
	// Until is when the call goes on; zero when that is not known (a slot of the rate
	// limiter).
	Until time.Time
}

// waitOf is the wait a model call's event, heard at now, begins or ends.
func waitOf(e model.Event, now time.Time) (Wait, bool) {
	switch e.Kind {
	case model.KindRetry:
		return Wait{Retry: true, Attempt: e.Attempt, Reason: e.Error, Until: now.Add(e.Wait)}, true
	case model.KindQueued:
		w := Wait{Reason: e.Reason}
		if e.Wait > 0 {
			w.Until = now.Add(e.Wait)
		}
		return w, true
	case model.KindPaced:
		return Wait{}, true
	}
	return Wait{}, false
}
