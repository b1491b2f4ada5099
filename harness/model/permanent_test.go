package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// TestPermanent: a provider's refusal that no retry cures is permanent, wrapped or not; a
// transient answer, a network failure or a cancelled run is not.
func TestPermanent(t *testing.T) {
	for err, want := range map[error]bool{
		&APIError{Status: http.StatusUnauthorized, Message: "bad key"}:                             true,
		fmt.Errorf("turn 3: %w", &APIError{Status: http.StatusNotFound, Message: "no such model"}): true,
		&APIError{Status: http.StatusTooManyRequests, Message: "slow down"}:                        false,
		&APIError{Status: http.StatusOK, Code: "server_error", Message: "failed"}:                  false,
		&APIError{Status: http.StatusBadGateway, Message: "upstream"}:                              false,
		errors.New("connection reset"):                                                             false,
		context.Canceled:                                                                           false,
		nil:                                                                                        false,
	} {
		if got := Permanent(err); got != want {
			t.Errorf("Permanent(%v) = %v, want %v", err, got, want)
		}
	}
}
