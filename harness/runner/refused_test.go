package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// refusing refuses Scenario-1's call for good once Scenario-2's call is under way, which
// waits until its episode is stopped.
type refusing struct{ waiting chan struct{} }

func (m refusing) Complete(ctx context.Context, _ model.Request) (model.Reply, error) {
	if id, _ := model.EpisodeFrom(ctx); id.Task == "Scenario-1" {
		<-m.waiting
		return model.Reply{}, fmt.Errorf("the provider at http://127.0.0.1:9/v1 (set by OPENAI_BASE_URL) refused the call: %w",
			&provider.APIError{Status: http.StatusUnauthorized, Message: "Incorrect API key provided"})
	}
	close(m.waiting)
	<-ctx.Done()
	return model.Reply{}, ctx.Err()
}

// TestPermanentRefusalStopsTheRun: an episode whose call is refused for good stops the run at
// once: it is recorded in error, the episode running beside it is stopped and recorded
// unfinished (a resume plays it again), no other starts, and the error is ErrRefused with the
// provider's words.
func TestPermanentRefusalStopsTheRun(t *testing.T) {
	f, err := runfolder.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gt := []byte("groups: [{id: p, kind: Pod, namespace: ns, filter: [p], root_cause: true}]\n")
	var tasks []data.Task
	for i := 1; i <= 4; i++ {
		tasks = append(tasks, data.Task{ID: fmt.Sprintf("Scenario-%d", i), Dir: t.TempDir(), GroundTruth: gt})
	}
	cfg := Config{Folder: f, Description: Description{Dataset: "test", Model: "fake/m"}, Repeats: 1, Parallel: 2,
		Player: Loop{Model: refusing{waiting: make(chan struct{})}}, Backend: &firstDies{started: 1}, Tools: &sandbox.Tools{},
		Settings: settings.Settings{MaxTurns: 5}, Tasks: tasks}
	_, results, err := Run(context.Background(), cfg)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	if !provider.Permanent(err) {
		t.Errorf("the run's error is not the permanent refusal: %v", err)
	}
	status := map[string]string{}
	for _, r := range results {
		status[r.Task] = r.Status
	}
	want := map[string]string{"Scenario-1": grader.StatusError, "Scenario-2": grader.StatusUnfinished, "Scenario-3": grader.StatusUnfinished, "Scenario-4": grader.StatusUnfinished}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", status, want)
	}
	recorded, err := runfolder.Read(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recorded.Results); n != 2 {
		t.Errorf("%d results recorded, want the 2 played", n)
	}
}
