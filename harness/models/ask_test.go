package models

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// answering is a model that answers every call with one text and records the requests.
type answering struct {
	text     string
	err      error
	requests []model.Request
}

func (a *answering) Complete(_ context.Context, req model.Request) (model.Reply, error) {
	a.requests = append(a.requests, req)
	if a.err != nil {
		return model.Reply{}, a.err
	}
	return model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: a.text},
		Usage: model.Usage{Input: 100, Output: 10}}, nil
}

func TestAskerSendsOneQuestionWithoutTools(t *testing.T) {
	m := &answering{text: `{"a": null}`}
	a := &Asker{Model: m}
	answer, err := a.Ask(context.Background(), "be a judge", "map these")
	if err != nil || answer != `{"a": null}` {
		t.Fatalf("answer %q, err %v", answer, err)
	}
	calls, used := a.Spent()
	if calls != 1 {
		t.Errorf("spent %d calls, want 1", calls)
	}
	if want := (model.Usage{Input: 100, Output: 10}); used != want {
		t.Errorf("spent %+v, want %+v", used, want)
	}
	req := m.requests[0]
	if len(req.Tools) != 0 {
		t.Errorf("the request offers tools %+v, want none", req.Tools)
	}
	if want := []model.Message{{Role: model.RoleSystem, Content: "be a judge"}, {Role: model.RoleUser, Content: "map these"}}; !reflect.DeepEqual(req.Messages, want) {
		t.Errorf("the request's messages %+v, want %+v", req.Messages, want)
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestAskerPassesErrorsOn(t *testing.T) {
	_, err := (&Asker{Model: &answering{err: errors.New("refused")}}).Ask(context.Background(), "s", "u")
	if err == nil || !strings.Contains(err.Error(), "ask the model: refused") {
		t.Fatalf("err = %v", err)
	}
}

func TestAskerSendsNoEmptySystemMessage(t *testing.T) {
	m := &answering{text: "{}"}
	if _, err := (&Asker{Model: m}).Ask(context.Background(), "", "map these"); err != nil {
		t.Fatal(err)
	}
	if msgs := m.requests[0].Messages; len(msgs) != 1 || msgs[0].Role != model.RoleUser {
		t.Fatalf("messages = %+v", msgs)
	}
}
