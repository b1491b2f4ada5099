package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/model"
)

func TestAskerSendsOneQuestionWithoutTools(t *testing.T) {
	m := &script{replies: []model.Message{{Role: model.RoleAssistant, Content: `{"a": null}`}}}
	a := &Asker{Model: m}
	answer, err := a.Ask(context.Background(), "be a judge", "map these")
	if err != nil || answer != `{"a": null}` {
		t.Fatalf("answer %q, err %v", answer, err)
	}
	if calls, used := a.Spent(); calls != 1 || used.Input != 100 || used.Output != 10 { // what script reports per call
		t.Errorf("spent %d calls, %+v", calls, used)
	}
	req := m.requests[0]
	if len(req.Tools) != 0 || len(req.Messages) != 2 || req.Messages[0].Role != model.RoleSystem || req.Messages[0].Content != "be a judge" ||
		req.Messages[1].Role != model.RoleUser || req.Messages[1].Content != "map these" {
		t.Fatalf("request = %+v", req)
	}
}

func TestAskerPassesErrorsOn(t *testing.T) {
	_, err := (&Asker{Model: failing{}}).Ask(context.Background(), "s", "u")
	if err == nil || !strings.Contains(err.Error(), "ask the model") {
		t.Fatalf("err = %v", err)
	}
}
