package provider

import (
	"context"
	"net/http"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
)

// AcquireRecorded waits for limit's permit for a request body of bytes long (a nil limit lets
// it go at once), recording what holds the call as "queued" events and, when it was held, how
// long as a "paced" event: every caller of a provider (post, the model gateway) records the
// limiter alike.
func AcquireRecorded(
	ctx context.Context,
	limit *ratelimit.Limiter,
	bytes int,
	record func(model.Event),
) (ratelimit.Permit, error) {
	p, err := limit.Acquire(ctx, bytes,
		func(h ratelimit.Hold) { record(model.Event{Kind: model.KindQueued, Reason: h.Reason, Wait: h.Wait}) })
	if err != nil {
		return p, err
	}
	if waited, held := p.Held(); held {
		record(model.Event{Kind: model.KindPaced, Wait: waited})
	}
	return p, nil
}

// ReleaseRecorded hands p back to limit with the call's answer (its header, nil when none came;
// its body; its error), recording a change of the calls allowed at once as a "throttle" event.
func ReleaseRecorded(
	limit *ratelimit.Limiter,
	p ratelimit.Permit,
	header http.Header,
	answer []byte,
	callErr error,
	record func(model.Event),
) {
	if t, changed := limit.Release(p, header, answer, callErr); changed {
		record(model.Event{Kind: model.KindThrottle, Status: t.Status, MaxInFlight: t.MaxInFlight})
	}
}
