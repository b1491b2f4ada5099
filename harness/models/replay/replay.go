// Package replay plays a recorded run back as a model, offline and deterministically.
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// Model plays back the replies a run recorded (replay/RUN_DIR): each episode gets the
// replies of the same task and repeat, in order, with their recorded usage, offline and
// deterministically. When the conversation it is sent differs from the recorded one (a changed
// prompt, sandbox or tool output), the replay goes on with the recorded replies and notes the
// first place each episode diverged.
type Model struct {
	Dir string

	mu          sync.Mutex
	episodes    map[model.EpisodeID]*replayed
	divergences []Divergence
}

// Divergence is where a replayed episode's conversation first differed from the recording.
type Divergence struct {
	Task   string `json:"task"`
	Repeat int    `json:"repeat"`
	Turn   int    `json:"turn"`
	Detail string `json:"detail"`
}

// ErrEnded marks an episode that asks for more replies than were recorded.
var ErrEnded = errors.New("the recording has no more replies")

type replayed struct {
	turns    []runfolder.TurnRecord
	next     int
	new      runfolder.NewMessages
	diverged bool
}

// New opens a recorded run folder; its errors are runfolder.ReadHeader's, marked
// ErrModelSpec too, and an agent run's, which is not replayed.
func New(dir string) (*Model, error) {
	h, err := runfolder.ReadHeader(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: replay/%s: %w", model.ErrModelSpec, dir, err)
	}
	if h.Agent != nil { // its turns are its agent's conversation, which the loop does not hold
		return nil, fmt.Errorf("%w: replay/%s: an agent run (%s) is not replayed: the loop would not make its agent's calls",
			model.ErrModelSpec, dir, h.Agent)
	}
	return &Model{Dir: dir, episodes: map[model.EpisodeID]*replayed{}}, nil
}

// Complete answers with the episode's next recorded reply.
func (r *Model) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	id, ok := model.EpisodeFrom(ctx)
	if !ok {
		return model.Reply{}, errors.New("replay: the call names no episode")
	}
	ep, err := r.episode(id)
	if err != nil {
		return model.Reply{}, err
	}
	if ep.next >= len(ep.turns) {
		return model.Reply{}, fmt.Errorf("replay of %s repeat %d: %w after %s", id.Task, id.Repeat, ErrEnded,
			english.Count(len(ep.turns), "call"))
	}
	rec := ep.turns[ep.next]
	ep.next++
	input := ep.new.Next(req, rec.Error != "")
	if !ep.diverged {
		if detail := differ(rec, req, input); detail != "" {
			ep.diverged = true
			d := Divergence{Task: id.Task, Repeat: id.Repeat, Turn: rec.Turn, Detail: detail}
			r.mu.Lock()
			r.divergences = append(r.divergences, d)
			r.mu.Unlock()
			model.RecordEvent(ctx, model.Event{Kind: model.KindDivergence, Error: fmt.Sprintf("turn %d: %s", d.Turn, detail)})
		}
	}
	if rec.Error != "" {
		if strings.Contains(rec.Error, model.ErrContextOverflow.Error()) {
			return model.Reply{}, fmt.Errorf("replayed: %w", model.ErrContextOverflow)
		}
		return model.Reply{}, fmt.Errorf("replayed: %s", rec.Error)
	}
	return model.Reply{Message: rec.Reply, Usage: rec.Usage, Cut: rec.Cut}, nil
}

// ErrUnrecorded marks a replay asked for episodes its recording does not have.
var ErrUnrecorded = errors.New("the recording cannot be followed")

// maxNamed bounds the episodes an ErrUnrecorded error names.
const maxNamed = 8

// Covers says whether the recording finished every episode of plan, so that a replay that
// could not follow it (more repeats or other tasks than were recorded) is refused before it
// plays anything, naming what the recording has, rather than ending those episodes in error.
func (r *Model) Covers(plan []runfolder.Episode) error {
	rec, err := runfolder.Read(r.Dir)
	if err != nil {
		return fmt.Errorf("replay/%s: %w", r.Dir, err)
	}
	var missing []runfolder.Episode
	for _, e := range plan {
		if _, ok := rec.Results[e]; !ok {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	recorded := slices.SortedFunc(maps.Keys(rec.Results), func(a, b runfolder.Episode) int {
		return cmp.Or(cmp.Compare(slices.Index(rec.Header.Tasks, a.Task), slices.Index(rec.Header.Tasks, b.Task)),
			strings.Compare(a.Task, b.Task), cmp.Compare(a.Repeat, b.Repeat))
	})
	return fmt.Errorf("%w: replay/%s has no recording of %d of the %s (%s); it recorded %s", ErrUnrecorded, r.Dir,
		len(missing), english.Count(len(plan), "episode"), nameEpisodes(missing), nameEpisodes(recorded))
}

// nameEpisodes names the first maxNamed episodes, and counts the rest.
func nameEpisodes(eps []runfolder.Episode) string {
	if len(eps) == 0 {
		return "none"
	}
	var names []string
	for _, e := range eps[:min(len(eps), maxNamed)] {
		names = append(names, fmt.Sprintf("%s repeat %d", e.Task, e.Repeat))
	}
	if len(eps) > maxNamed {
		names = append(names, fmt.Sprintf("and %d more", len(eps)-maxNamed))
	}
	return strings.Join(names, ", ")
}

// Divergences lists the episodes whose conversation differed from the recording, each at its
// first difference.
func (r *Model) Divergences() []Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Divergence(nil), r.divergences...)
}

// episode loads an episode's recording on its first call.
func (r *Model) episode(id model.EpisodeID) (*replayed, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ep, ok := r.episodes[id]; ok {
		return ep, nil
	}
	turns, err := runfolder.ReadTurns(runfolder.EpisodeDir(r.Dir, runfolder.Episode{Task: id.Task, Repeat: id.Repeat}))
	if err != nil {
		return nil, fmt.Errorf("replay of %s repeat %d: %w", id.Task, id.Repeat, err)
	}
	ep := &replayed{turns: turns}
	r.episodes[id] = ep
	return ep, nil
}

// differ says how a call differs from the recorded one, or "" when it does not.
func differ(rec runfolder.TurnRecord, req model.Request, input []model.Message) string {
	if rec.Summary != req.Summary {
		return fmt.Sprintf("the recording has a summary call=%v here, the run summary call=%v", rec.Summary, req.Summary)
	}
	if len(input) != len(rec.Input) {
		return fmt.Sprintf("%s, the recording has %d", english.Count(len(input), "new message"), len(rec.Input))
	}
	for i, m := range input {
		was := rec.Input[i]
		switch {
		case m.Role != was.Role:
			return fmt.Sprintf("message %d is from the %s, the recording's from the %s", i+1, m.Role, was.Role)
		case m.ToolCallID != was.ToolCallID:
			return fmt.Sprintf("message %d (%s) answers tool call %q, the recording's %q", i+1, m.Role, m.ToolCallID,
				was.ToolCallID)
		case m.IsError != was.IsError:
			return fmt.Sprintf("message %d (%s) is an error=%v, the recording's error=%v", i+1, m.Role, m.IsError, was.IsError)
		case m.Content != was.Content:
			return fmt.Sprintf("message %d (%s) differs %s", i+1, m.Role, whereDiffer(was.Content, m.Content))
		}
	}
	return ""
}

// diffContext is how many characters whereDiffer shows on each side of the first difference.
const diffContext = 40

// whereDiffer says where two texts first differ, recorded then now: the character (and line)
// where they part, and the text around it in both. Messages share long prefixes (a prompt, a
// tool's output), so their beginnings would show nothing.
func whereDiffer(recorded, now string) string {
	a, b := []rune(recorded), []rune(now)
	at := 0
	for at < len(a) && at < len(b) && a[at] == b[at] {
		at++
	}
	line := 1 + strings.Count(string(a[:at]), "\n")
	window := func(r []rune) string {
		from, to := max(at-diffContext, 0), min(at+diffContext, len(r))
		s := fmt.Sprintf("%q", string(r[from:to]))
		if from > 0 {
			s = "..." + s
		}
		if to < len(r) {
			s += "..."
		}
		return s
	}
	return fmt.Sprintf("at character %d (line %d) of %d recorded, %d now: recorded %s, now %s", at+1, line, len(a), len(b),
		window(a), window(b))
}
