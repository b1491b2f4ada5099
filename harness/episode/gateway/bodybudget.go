package gateway

import (
	"context"
	"io"
	"net/http"
)

// Request bodies live in aa-grade's own memory, outside every sandbox's limits: each
// connection holds one request at a time, but an agent can open many. The gateway therefore
// bounds the bytes of the bodies it holds at once, read or being read, across its
// connections, to bodyBudget: a body takes its share before a byte of it is read (its declared
// length, or the cap on a request when it declares none) and gives it back when its request
// ends. Honest agents' calls (kilobytes to a few MiB, a few at once) never wait; a flood of
// 32 MiB requests is read two at a time.

// bodyBudget is the bytes of request bodies an episode's gateway holds at once: two of the
// largest requests.
const bodyBudget = 2 * maxRequestBytes

// budgetUnit is the grain the budget is counted in.
const budgetUnit = 256 << 10

// byteBudget is a budget of bytes, taken and given back in units, one taker at a time so that
// two large takers cannot each hold half of what both need.
type byteBudget struct {
	turn  chan struct{} // held by the one taking units
	units chan struct{} // a unit taken is a value in it
}

func newByteBudget(bytes int) *byteBudget {
	return &byteBudget{turn: make(chan struct{}, 1), units: make(chan struct{}, bytes/budgetUnit)}
}

// take waits until n bytes (rounded up to units) are free and takes them; it returns the units
// taken, or ctx's error (nothing taken) when ctx ends first.
func (b *byteBudget) take(ctx context.Context, n int64) (int, error) {
	want := int(min((n+budgetUnit-1)/budgetUnit, int64(cap(b.units))))
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-b.turn }()
	for i := range want {
		select {
		case b.units <- struct{}{}:
		case <-ctx.Done():
			b.give(i)
			return 0, ctx.Err()
		}
	}
	return want, nil
}

// give gives back n units.
func (b *byteBudget) give(n int) {
	for range n {
		<-b.units
	}
}

// readBody reads r's body, up to maxRequestBytes, within the gateway's budget of bytes: one
// over the cap is errTooLarge, unread when its declared length says so, else with what came
// up to the cap (for the record). done gives the body's share back: call it once the request
// has ended (the body no longer held).
func (g *Gateway) readBody(r *http.Request) (body []byte, done func(), err error) {
	if r.ContentLength > maxRequestBytes {
		return nil, func() {}, errTooLarge
	}
	size := r.ContentLength
	if size < 0 {
		size = maxRequestBytes + 1 // unknown: the most it may be
	}
	units, err := g.bodies.take(r.Context(), size)
	if err != nil {
		return nil, func() {}, err
	}
	done = func() { g.bodies.give(units) }
	if r.ContentLength >= 0 { // read into a buffer of its size, not one grown by doubling
		body = make([]byte, 0, r.ContentLength+1)
	}
	body, err = readAllInto(body, io.LimitReader(r.Body, maxRequestBytes+1))
	if err == nil && len(body) > maxRequestBytes {
		err = errTooLarge
	}
	return body, done, err
}

// readAllInto appends all of r to buf, as io.ReadAll does, into buf's capacity first.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
