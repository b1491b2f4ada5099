// Package export turns a run's episodes into the formats other tools read: Harbor's
// trajectory format (ATIF) and OpenAI chat messages (Chat). It reads the run folder through
// harness/vocab/runfolder only, as every reader of runs does; what each format keeps and loses is in
// docs/formats.md.
package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// ErrNoTrajectory marks an episode that left no trajectory (it failed before its first call).
var ErrNoTrajectory = errors.New("no trajectory")

// call is one model call as the trajectory recorded it.
type call struct {
	runfolder.TurnRecord
	// unreported says the answer gave no token counts: the zeros of its usage are unknown.
	unreported bool
}

// episode is what the formats are made of: an episode's calls, the tools its first request
// offered (in OpenAI's function shape), its submission, its result.
type episode struct {
	calls      []call
	tools      []json.RawMessage
	submission []byte // nil when the episode left none
	result     *runfolder.Result
}

// readEpisode reads the episode e of run: its turn records (and which of them reported no
// usage) and the first request's tools, streaming the trajectory past the raw bodies.
func readEpisode(run *runfolder.Run, e runfolder.Episode) (*episode, error) {
	dir := runfolder.EpisodeDir(run.Dir, e)
	f, err := runfolder.OpenTrajectory(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoTrajectory)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ep := &episode{}
	requested := false
	want := func(k model.EventKind) bool {
		return k == model.KindTurn || k == model.KindNoUsage || (k == model.KindRequest && !requested)
	}
	path := filepath.Join(dir, runfolder.TrajectoryFile)
	unreported := false
	reader := runfolder.NewTrajectoryReader(f, want)
	for line := range reader.Lines() {
		if line.Err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line.N, line.Err)
		}
		if !line.Whole {
			break // the last line, cut by a crash
		}
		switch line.Kind {
		case model.KindTurn:
			t, err := line.Turn()
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line.N, err)
			}
			ep.calls = append(ep.calls, call{TurnRecord: withRoles(t), unreported: unreported})
			unreported = false
		case model.KindNoUsage:
			unreported = true
		case model.KindRequest:
			requested = true
			ev, err := line.Event()
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line.N, err)
			}
			ep.tools = toolDefinitions(ev.Body)
		}
	}
	if err := reader.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	switch b, err := safefile.ReadPath(filepath.Join(dir, grader.SubmissionFile), grader.MaxSubmissionBytes); {
	case err == nil:
		ep.submission = b
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read the submission: %w", err)
	}
	if r, ok := run.Results[e]; ok {
		ep.result = &r
	}
	return ep, nil
}

// withRoles is a turn record whose messages each have their role: a reply is the assistant's,
// and so is a message of its input without one (a reply sent again), as the loop sends them;
// builtin/baseline once recorded its replies with none, and replays of its runs still do.
func withRoles(t runfolder.TurnRecord) runfolder.TurnRecord {
	t.Reply.Role = model.RoleAssistant
	input := make([]model.Message, len(t.Input))
	for i, m := range t.Input {
		if m.Role == "" {
			m.Role = model.RoleAssistant
		}
		input[i] = m
	}
	t.Input = input
	return t
}

// toolDefinitions are the tools of a request body in OpenAI's function-calling shape, whichever
// API it was for: Chat Completions' (already so), the Responses API's (flat functions) or
// Anthropic's (input_schema for parameters).
func toolDefinitions(body []byte) []json.RawMessage {
	var out []json.RawMessage
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		fn := t.Get("function")
		if !fn.Exists() {
			fn = t
		}
		params := fn.Get("parameters")
		if !params.Exists() {
			params = fn.Get("input_schema")
		}
		def := map[string]any{"name": fn.Get("name").String(), "description": fn.Get("description").String()}
		if params.Exists() {
			def["parameters"] = json.RawMessage(params.Raw)
		}
		b, err := json.Marshal(map[string]any{"type": "function", "function": def})
		if err == nil {
			out = append(out, b)
		}
		return true
	})
	return out
}

// Episodes are the run's episodes that have a folder, in the order of the run's tasks, then
// repeats: those an export can hold.
func Episodes(run *runfolder.Run) []runfolder.Episode {
	var out []runfolder.Episode
	for _, task := range run.Header.Tasks {
		for r := 1; r <= run.Header.Repeats; r++ {
			e := runfolder.Episode{Task: task, Repeat: r}
			if info, err := os.Stat(runfolder.EpisodeDir(run.Dir, e)); err == nil && info.IsDir() {
				out = append(out, e)
			}
		}
	}
	return out
}
