package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// wantReply checks a call that succeeded: no error, the reply's text content, and the number
// of requests the provider received (the retries the call took); it stops the test if any is
// not as wanted.
func wantReply(t testing.TB, reply model.Reply, err error, content string, received [][]byte, requests int) {
	t.Helper()
	if err != nil {
		t.Fatalf("the call failed after %d requests: %v", len(received), err)
	}
	ok := true
	if reply.Message.Content != content {
		t.Errorf("replied %q, want %q: %+v", reply.Message.Content, content, reply.Message)
		ok = false
	}
	if !wantRequests(t, received, requests) || !ok {
		t.FailNow()
	}
}

// wantRequests checks the number of requests the provider received, and says whether it is n.
func wantRequests(t testing.TB, received [][]byte, n int) bool {
	t.Helper()
	if len(received) != n {
		t.Errorf("%d requests, want %d", len(received), n)
		return false
	}
	return true
}

// wantErr checks that err holds each of pieces and none of unwanted, and that it is, or wraps,
// target (nil: any error); it says whether all of that holds.
func wantErr(t testing.TB, err, target error, pieces []string, unwanted ...string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want one saying %q", pieces)
		return false
	}
	ok := true
	if target != nil && !errors.Is(err, target) {
		t.Errorf("err = %v, want %v", err, target)
		ok = false
	}
	for _, p := range pieces {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("err = %v, lacks %q", err, p)
			ok = false
		}
	}
	for _, p := range unwanted {
		if strings.Contains(err.Error(), p) {
			t.Errorf("err = %v, has %q", err, p)
			ok = false
		}
	}
	return ok
}

// wantAPIError checks that err is an *APIError of status whose text holds piece; it gives the
// *APIError (nil when err is none) and whether all of that holds.
func wantAPIError(t testing.TB, err error, status int, piece string) (*APIError, bool) {
	t.Helper()
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Errorf("err = %v, want an *APIError", err)
		return nil, false
	}
	ok := true
	if apiErr.Status != status {
		t.Errorf("err = %v: status %d, want %d", err, apiErr.Status, status)
		ok = false
	}
	if !strings.Contains(err.Error(), piece) {
		t.Errorf("err = %v, lacks %q", err, piece)
		ok = false
	}
	return apiErr, ok
}
