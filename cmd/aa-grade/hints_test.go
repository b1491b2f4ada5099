package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestHints: each hint is added to the error it is for, at the end of its line and keeping
// its chain (so its exit code), and to no other error.
func TestHints(t *testing.T) {
	noIsolation := fmt.Errorf("--sandbox: %w", fmt.Errorf("%w: %w (bwrap: not installed); install bubblewrap", sandbox.ErrUnavailable, sandbox.ErrNoIsolation))
	noImage := fmt.Errorf("probe the sandbox: %w", fmt.Errorf("%w x:1: pull or build it (docker pull x:1)", sandbox.ErrNoImage))
	notPreset := fmt.Errorf("%w: %q is %w (a, b)", model.ErrModelSpec, "gpt-9", models.ErrNotPreset)
	other := errors.New("disk full")
	for _, c := range []struct {
		name     string
		hint     func(error) error
		err      error
		suffix   string
		unhinted error
	}{
		{"isolation", isolationHint, noIsolation, "; install bubblewrap, or run with --sandbox none at your own risk", noImage},
		{"image", imageHint, noImage, "(docker pull x:1), or name another with --sandbox-image", noIsolation},
		{"preset", func(err error) error { return modelSpecError("--judge", err) }, notPreset, "(a, b); aa-grade models lists them", other},
	} {
		got := c.hint(c.err)
		if !strings.HasSuffix(got.Error(), c.suffix) || !errors.Is(got, c.err) {
			t.Errorf("%s: %v, want it to end with %q and wrap the cause", c.name, got, c.suffix)
		}
		if again := c.hint(c.unhinted); strings.Contains(again.Error(), "aa-grade models") || strings.Contains(again.Error(), ", or ") {
			t.Errorf("%s: hinted another error: %v", c.name, again)
		}
	}
	if isolationHint(nil) != nil || imageHint(nil) != nil {
		t.Error("a hint made an error of nil")
	}
	if got := modelSpecError("--model", other).Error(); got != "--model: disk full" {
		t.Errorf("an error of another kind: %q", got)
	}
}
