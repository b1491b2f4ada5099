package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

// Class is what a failed call says of calling again: the one rule the providers' retries, the
// gateway's and the run's stop all follow.
type Class int

const (
	// ClassOther is no provider's failure: none, a cancelled run, a context overflow (the loop
	// summarises), a reply the loop cannot read.
	ClassOther Class = iota
	// ClassTransient is a failure another attempt may not meet: throttling (a 429 that is a
	// rate), 408, 409, a server error or overload (5xx but 501), an attempt timed out, a
	// connection reset, an answer cut short. It is retried within the call's retry time.
	ClassTransient
	// ClassPermanent is a refusal every later call would meet: a quota or billing refusal in
	// any provider's shape (even sent as a 429), any other 4xx (a context overflow aside), 501,
	// a 200 whose body is not JSON at all (an ordinary web server's page), an answer over the
	// size cap, an address that cannot be reached (no such host, refused, TLS failing). The
	// run stops on it.
	ClassPermanent
)

// Classify says which class err is in.
func Classify(err error) Class {
	var apiErr *APIError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, model.ErrContextOverflow):
		return ClassOther
	case errors.As(err, &apiErr):
		if contextOverflow(apiErr) {
			return ClassOther // the loop summarises; an agent compacts its history
		}
		if apiErr.Transient() {
			return ClassTransient
		}
		return ClassPermanent
	case errors.Is(err, ErrUnreachable), backoff.Unreachable(err), errors.Is(err, errNotAPI),
		errors.Is(err, errTooLarge):
		return ClassPermanent
	case errors.Is(err, errIdle), errors.Is(err, context.DeadlineExceeded), transientNetwork(err):
		return ClassTransient
	}
	return ClassOther
}

// Permanent reports whether err is a failure no retry cures (ClassPermanent): the run stops
// on it instead of failing every other episode the same way.
func Permanent(err error) bool { return Classify(err) == ClassPermanent }

// RetryWorth reports whether a call whose attempt number attempt (from 1) failed with err is
// worth another attempt: a transient failure, or an address that could not be reached, which
// gets backoff.UnreachableAttempts (a server restarting, a resolver's hiccup) before it counts
// as permanent.
func RetryWorth(err error, attempt int) bool {
	switch Classify(err) {
	case ClassTransient:
		return true
	case ClassPermanent:
		return backoff.Unreachable(err) && attempt < backoff.UnreachableAttempts
	}
	return false
}

// Transient reports whether the answer is worth retrying: timeouts, conflicts, rate limits,
// server errors and overload (Anthropic's 529), also when a 200 answer reports them by code
// (the Responses API's failed responses); never a quota or billing refusal, nor 501 (the
// server does not implement the API: an ordinary web server).
func (e *APIError) Transient() bool {
	if e.billing || e.Status == http.StatusNotImplemented {
		return false
	}
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusConflict ||
		e.Status == http.StatusTooManyRequests || e.Status >= 500 ||
		e.Code == "server_error" ||
		e.Code == "rate_limit_exceeded"
}

// ErrorAnswer is the APIError of an error answer (status 400 or more) whose body, the key
// already taken out, is body: the provider's code and own message, the wait it asks for, and
// whether it refuses for quota or billing (billingRefusal).
func ErrorAnswer(status int, header http.Header, body []byte) *APIError {
	return &APIError{Status: status, Code: gjson.GetBytes(body, "error.code").String(), Message: errorMessage(body),
		retryAfter: RetryAfter(header), billing: billingRefusal(gjson.GetBytes(body, "error"))}
}

// billingCodes are the codes and types of quota and billing refusals: OpenAI's
// insufficient_quota (sent as a 429, though no wait cures it) and its billing codes,
// Anthropic's billing_error (a 402, or its type in a 200 answer).
var billingCodes = map[string]bool{"insufficient_quota": true, "billing_hard_limit_reached": true,
	"billing_not_active": true, "billing_error": true}

// billingSigns are words of the refusals that say so only in their message: Anthropic's low
// credit balance, OpenRouter's credits.
var billingSigns = []string{"credit balance is too low", "insufficient credits", "insufficient balance"}

// billingRefusal reports whether a provider's error object (the "error" of its answer) refuses
// for quota or billing, not for a rate: a code or type of billingCodes, a message with one of
// billingSigns, or Gemini's RESOURCE_EXHAUSTED whose QuotaFailure names a daily quota or a
// limit of 0 (its per-minute quotas are rates, and retried).
func billingRefusal(errObject gjson.Result) bool {
	if !errObject.IsObject() {
		return false
	}
	if billingCodes[errObject.Get("code").String()] || billingCodes[errObject.Get("type").String()] {
		return true
	}
	message := strings.ToLower(errObject.Get("message").String())
	for _, sign := range billingSigns {
		if strings.Contains(message, sign) {
			return true
		}
	}
	if errObject.Get("status").String() != "RESOURCE_EXHAUSTED" {
		return false
	}
	if strings.Contains(message, "limit: 0,") {
		return true // no quota at all for this model and tier
	}
	for _, d := range errObject.Get("details").Array() {
		if !strings.HasSuffix(d.Get("@type").String(), "google.rpc.QuotaFailure") {
			continue
		}
		for _, v := range d.Get("violations").Array() {
			if strings.Contains(v.Get("quotaId").String(), "PerDay") {
				return true
			}
		}
	}
	return false
}
