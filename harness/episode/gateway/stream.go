package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// stream relays a streamed answer (server-sent events) to the agent event by event, each
// sent on as it comes, so the agent reads the reply as the model writes it. The answer's
// status goes back with its first event: a stream cut before it, or whose first event is a
// transient error (Anthropic's overloaded_error), is retried as any failed attempt; one cut
// after it cannot be, and the agent's connection is cut too, so that the
// agent sees a broken stream rather than an answer that ends early. The trajectory keeps the
// stream's text as it came, up to provider.MaxResponseBytes.
func (c *call) stream(resp *http.Response, release func(http.Header, []byte, error)) error {
	events := eventReader{r: bufio.NewReader(resp.Body)}
	answer := c.g.cfg.Upstream.Protocol.dialect().stream()
	var text transcript
	ev, err := events.next()
	if err != nil {
		text.add(ev)
		c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: text.body(),
			Error: "the stream was cut before its first event: " + err.Error()})
		release(resp.Header, nil, err)
		return &errRetry{err: err}
	}
	if f := c.g.cfg.Upstream.Protocol.failureIn(eventData(ev)); f != nil && f.Transient() {
		text.add(ev)
		c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: text.body(),
			Error: "the stream's first event is an error"})
		return c.retryable(resp, ev, f, release)
	}
	copyAnswerHeader(c.w.Header(), resp.Header)
	c.w.Header().Set("Cache-Control", "no-cache")
	c.w.WriteHeader(resp.StatusCode)
	flush := http.NewResponseController(c.w).Flush
	var sendErr error
	for {
		text.add(ev)
		if data := eventData(ev); len(data) > 0 {
			answer.Add(data)
		}
		// An event is flushed at once unless the next one is already here, to go with it:
		// nothing waits for the provider, and bursts cost one write.
		if _, sendErr = c.w.Write(provider.Scrub(ev, c.g.cfg.Upstream.APIKey)); sendErr == nil && !events.ready() {
			sendErr = flush()
		}
		if sendErr != nil {
			break
		}
		if answer.Ended() { // the last event went: the answer ends with it, whatever follows
			err = io.EOF
			break
		}
		if ev, err = events.next(); err != nil {
			text.add(ev)
			break
		}
	}
	if err == io.EOF && !answer.Ended() {
		err = errors.New("the stream ended before its last event")
	}
	// An agent that hangs up once the last event went (Codex does) missed nothing.
	hungUp := sendErr != nil || (c.ctx.Err() != nil && !answer.Ended())
	var failure error
	switch {
	case hungUp:
		failure = fmt.Errorf("the agent hung up mid-stream: %w", errors.Join(sendErr, c.ctx.Err()))
	case err != io.EOF:
		failure = fmt.Errorf("the stream was cut: %w", err)
	}
	response := model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: text.body(), Error: text.note}
	if failure != nil {
		response.Error = joinNotes(failure.Error(), text.note)
	}
	c.note(response)
	c.answer, c.err = answer.Answer(), failure
	if failure == nil {
		release(resp.Header, c.answer, nil)
	} else {
		release(resp.Header, nil, failure)
	}
	if c.model {
		c.used(gjson.GetBytes(c.answer, c.g.cfg.Upstream.Protocol.dialect().field).Raw,
			answer.Ended()) // a cut stream was billed too: at its worst case
	}
	if failure != nil && !hungUp {
		panic(http.ErrAbortHandler) // net/http's way to cut the agent's connection; forward's defer records the call
	}
	return failure
}

func joinNotes(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// eventReader splits a server-sent event stream into its events.
type eventReader struct{ r *bufio.Reader }

// next is the next event, raw, the blank line that ends it included. At the stream's end it
// returns io.EOF, or io.ErrUnexpectedEOF with what came of an event cut short.
func (e eventReader) next() ([]byte, error) {
	var ev []byte
	for {
		line, err := e.r.ReadSlice('\n')
		ev = append(ev, line...)
		switch {
		case len(ev) > provider.MaxResponseBytes:
			return ev, fmt.Errorf("an event is larger than the %d MiB cap on an answer", provider.MaxResponseBytes>>20)
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(ev) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return ev, io.ErrUnexpectedEOF
		case err != nil:
			return ev, err
		case len(ev) > len(line) && (string(line) == "\n" || string(line) == "\r\n"):
			return ev, nil
		}
	}
}

// ready reports whether a whole event has come already, so that next returns it at once.
func (e eventReader) ready() bool {
	buf, _ := e.r.Peek(e.r.Buffered())
	return bytes.Contains(buf, []byte("\n\n")) || bytes.Contains(buf, []byte("\r\n\r\n"))
}

// eventData is an event's data: its data lines, joined by newlines.
func eventData(ev []byte) []byte {
	var data []byte
	for line := range bytes.Lines(ev) {
		v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		if data != nil {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
	}
	return data
}

// transcript is a stream's text for the trajectory, bounded by provider.MaxResponseBytes.
type transcript struct {
	text []byte
	note string // set when the text was cut at the bound
}

func (t *transcript) add(ev []byte) {
	if len(t.text)+len(ev) > provider.MaxResponseBytes {
		t.note = fmt.Sprintf("the stream is longer than %d MiB: the trajectory keeps its beginning",
			provider.MaxResponseBytes>>20)
		return
	}
	t.text = append(t.text, ev...)
}

// body is the text as a JSON string.
func (t *transcript) body() json.RawMessage {
	if len(t.text) == 0 {
		return nil
	}
	b, _ := json.Marshal(string(t.text))
	return b
}
