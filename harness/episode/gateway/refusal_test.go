package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// countingBody counts the bytes the gateway read of a request's body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// readCounter serves e's gateway behind a handler that counts what it reads of the bodies.
func readCounter(t *testing.T, e *episode) (url string, read *atomic.Int64) {
	read = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = countingBody{r.Body, read}
		e.gw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, read
}

// TestRefusalsReadNothing: a request with another token, at another path, with another
// method, or whose declared length is over the cap is refused before a byte of its body is
// read, and recorded without it.
func TestRefusalsReadNothing(t *testing.T) {
	f := newProvider(t, gateway.Chat)
	e := newEpisode(t, f, nil)
	url, read := readCounter(t, e)
	body := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name, method, path, token string
		length                    int64
	}{
		{"another token", http.MethodPost, gateway.Chat.Path(), "not-the-token", 0},
		{"another path", http.MethodPost, "/v1/completions", token, 0},
		{"another method", http.MethodPut, gateway.Chat.Path(), token, 0},
		{"declared over the cap", http.MethodPost, gateway.Chat.Path(), token, 64 << 20},
	} {
		read.Store(0)
		req, err := http.NewRequest(c.method, url+c.path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		if c.length > 0 { // a body that says it is larger than it is: the gateway must not wait for it
			req.Body = io.NopCloser(io.MultiReader(strings.NewReader(body), strings.NewReader(strings.Repeat("y", int(c.length)-len(body)))))
			req.ContentLength = c.length
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s: status %d, want a refusal", c.name, resp.StatusCode)
		}
		if n := read.Load(); n != 0 {
			t.Errorf("%s: the gateway read %d bytes of the body, want none", c.name, n)
		}
	}
	for _, ev := range e.recorded() {
		if ev.Kind == model.KindRequest && len(ev.Body) > 0 {
			t.Errorf("a request refused unread recorded the body %.60s", ev.Body)
		}
	}
	if f.calls() != 0 {
		t.Errorf("the provider got %d calls", f.calls())
	}
}

// TestRefusedBodyBounded: a refused request whose body is large, or not JSON, is recorded as
// the beginning of its body, at most 4 KiB however it quotes, with its length and sha256; a
// small JSON one as it is. The lines follow the trajectory's schema.
func TestRefusedBodyBounded(t *testing.T) {
	schema := trajectorySchema(t)
	control := bytes.Repeat([]byte{1, '<', 0xff}, 1<<20) // quotes to 6 times its size, and is no UTF-8
	large := `{"model":"gpt-NOT-ALLOWED","messages":[{"role":"user","content":"` + strings.Repeat("a", 8<<20) + `"}]}`
	small := `{"model":"gpt-NOT-ALLOWED","messages":[]}`
	for name, body := range map[string]string{"control bytes": string(control), "large JSON": large, "small JSON": small} {
		f := newProvider(t, gateway.Chat)
		e := newEpisode(t, f, nil)
		resp, _, _ := do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), body))
		if resp.StatusCode < 400 {
			t.Errorf("%s: status %d, want a refusal", name, resp.StatusCode)
		}
		events := e.recorded()
		if len(events) != 2 {
			t.Fatalf("%s: recorded %d events, want 2", name, len(events))
		}
		req := events[0]
		if name == "small JSON" {
			if string(req.Body) != small {
				t.Errorf("%s: recorded %s, want the body as it came", name, req.Body)
			}
			continue
		}
		if len(req.Body) > 4<<10 {
			t.Errorf("%s: recorded %d bytes of body, want at most 4 KiB", name, len(req.Body))
		}
		if len(req.Body) < 1<<10 {
			t.Errorf("%s: recorded %d bytes of body, want its beginning", name, len(req.Body))
		}
		if req.BodyBytes != int64(len(body)) {
			t.Errorf("%s: recorded a length of %d, want %d", name, req.BodyBytes, len(body))
		}
		sum := sha256.Sum256([]byte(body))
		if req.BodySHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: recorded the sha256 %s", name, req.BodySHA256)
		}
		for _, ev := range events {
			line, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(line); err != nil {
				t.Errorf("%s: %.200s: %v", name, line, err)
			}
		}
	}
}

// TestRefusalCap: the MaxRefusals-th refused request tells the episode (ErrRefusals) once;
// every request after is refused unread and unrecorded, a model call that would have passed
// included.
func TestRefusalCap(t *testing.T) {
	f := newProvider(t, gateway.Chat)
	e := newEpisode(t, f, nil)
	for range gateway.MaxRefusals + 5 {
		req := e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, "gpt-NOT-ALLOWED", false))
		resp, _, _ := do(t, req)
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want a refusal", resp.StatusCode)
		}
	}
	resp, body, _ := do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, runModel, false)))
	wantError(t, "a call past the refusals", gateway.Chat, resp, body, http.StatusBadRequest, []string{"episode_refusals_exceeded"}, "refused")
	if n := len(e.recorded()); n != 2*gateway.MaxRefusals {
		t.Errorf("recorded %d events, want the %d refusals' requests and answers", n, gateway.MaxRefusals)
	}
	told := e.told()
	if len(told) != 1 {
		t.Fatalf("the episode was told %v, want once", told)
	}
	if !errors.Is(told[0], gateway.ErrRefusals) {
		t.Errorf("the episode was told %v, want ErrRefusals", told[0])
	}
	if tot := e.gw.Totals(); !errors.Is(tot.Capped, gateway.ErrRefusals) {
		t.Errorf("totals say capped by %v", tot.Capped)
	}
	if f.calls() != 0 {
		t.Errorf("the provider got %d calls", f.calls())
	}
}
