package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// ErrProviderTool marks a request refused for asking the provider to run a tool itself.
var ErrProviderTool = errors.New(
	"the gateway passes on no tool the provider runs itself (web search, fetch, MCP, code execution)")

// providerTool is the refusal of a request that holds a provider-side tool: a 400, final,
// as the provider's own answer to a tool it does not know would be.
var providerTool = refusal{http.StatusBadRequest, "invalid_request_error", "provider_tool_refused", "INVALID_ARGUMENT"}

// onlineSuffix is OpenRouter's model variant that searches the web for every call.
const onlineSuffix = ":online"

// CheckModel refuses a model whose name asks the provider to run a tool for every call
// (OpenRouter's :online variant searches the web), unless the provider's tools are allowed.
func CheckModel(name string, providerTools bool) error {
	if strings.HasSuffix(name, onlineSuffix) && !providerTools {
		return fmt.Errorf("model %q searches the web on the provider's side (%s): %w", name, onlineSuffix, ErrProviderTool)
	}
	return nil
}

// screen checks an agent's request, its model already checked, against what its protocol
// may hold (allow.go): it returns the request and body to pass on, with what is not allowed
// stripped, and the event that records what was (none when nothing was); or an error,
// wrapping ErrProviderTool, when the body holds a provider-side tool. A run that allows the
// provider's tools passes everything as it came.
func (g *Gateway) screen(r *http.Request, body []byte) (*http.Request, []byte, []model.Event, error) {
	if g.cfg.ProviderTools {
		return r, body, nil, nil
	}
	p := g.cfg.Upstream.Protocol
	out, removed, err := screenBody(p, body, "")
	if err != nil {
		g.mu.Lock()
		g.totals.ProviderTools++
		g.mu.Unlock()
		return r, body, nil, err
	}
	header, headerRemoved := screenHeader(r.Header)
	removed = append(removed, headerRemoved...)
	if len(removed) == 0 {
		return r, body, nil, nil
	}
	if len(headerRemoved) > 0 {
		r = r.WithContext(r.Context())
		r.Header = header
	}
	g.mu.Lock()
	g.totals.Stripped++
	g.mu.Unlock()
	return r, out, []model.Event{
		{Kind: model.KindStripped, Error: "not passed on to the provider: " + strings.Join(removed, ", ")}}, nil
}

// member is a key of a JSON object and its value, raw.
type member struct{ key, value string }

// screenBody is body, a request of protocol p (at, where it stands in the whole request, for
// the names of what is removed), with the fields its protocol does not allow taken out, and
// their names; or an error naming the first provider-side tool.
func screenBody(p Protocol, body []byte, at string) ([]byte, []string, error) {
	var members []member
	var removed []string
	var err error
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		value := v.Raw
		switch {
		case !allowedFields[p][k.Str]:
			removed = append(removed, at+k.Str)
			return true
		case k.Str == toolChoiceField && v.IsObject() && !toolChoices[p][v.Get("type").String()]:
			err = fmt.Errorf("%w: %s%s forces type %s, which the provider runs itself", ErrProviderTool, at, k.Str,
				v.Get("type").Raw)
		case k.Str == toolsField && v.IsArray():
			var rm []string
			value, rm, err = screenTools(p, v, at+k.Str)
			removed = append(removed, rm...)
		case p == Gemini && geminiWrapped[k.Str] && v.IsObject():
			var nested []byte
			var rm []string
			nested, rm, err = screenBody(p, []byte(v.Raw), at+k.Str+".")
			value, removed = string(nested), append(removed, rm...)
		}
		members = append(members, member{k.Raw, value})
		return err == nil
	})
	if err != nil || len(removed) == 0 {
		return body, nil, err
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.key + ":" + m.value)
	}
	b.WriteByte('}')
	return []byte(b.String()), removed, nil
}

// screenTools is tools, the tools array at at, with the keys of each tool its protocol does
// not allow taken out, and their names; or an error naming the first tool that is no
// client-side function tool.
func screenTools(p Protocol, tools gjson.Result, at string) (string, []string, error) {
	var kept []string
	var removed []string
	for i, t := range tools.Array() {
		where := fmt.Sprintf("%s[%d]", at, i)
		if ok, what := clientTool(p, t); !ok {
			return "", nil, fmt.Errorf("%w: %s is %s, which the provider runs itself; only function tools the agent runs pass",
				ErrProviderTool, where, what)
		}
		var keys []string
		t.ForEach(func(k, v gjson.Result) bool {
			if !functionKeys[p][k.Str] {
				removed = append(removed, where+"."+k.Str)
				return true
			}
			keys = append(keys, k.Raw+":"+v.Raw)
			return true
		})
		kept = append(kept, "{"+strings.Join(keys, ",")+"}")
	}
	if len(removed) == 0 {
		return tools.Raw, nil, nil
	}
	return "[" + strings.Join(kept, ",") + "]", removed, nil
}

// screenHeader is h with the beta values it may not pass on taken out, and their names; h
// itself when none is.
func screenHeader(h http.Header) (http.Header, []string) {
	var removed []string
	out, cloned := h, false
	for key, allowed := range allowedHeaderValues {
		var kept []string
		changed := false
		for _, v := range h.Values(key) {
			for _, beta := range strings.Split(v, ",") {
				beta = strings.TrimSpace(beta)
				if beta == "" {
					continue
				}
				if allowed[betaName(beta)] || allowed[beta] {
					kept = append(kept, beta)
					continue
				}
				changed = true
				removed = append(removed, "header "+strings.ToLower(key)+": "+beta)
			}
		}
		if !changed {
			continue
		}
		if !cloned {
			out, cloned = h.Clone(), true
		}
		out.Del(key)
		if len(kept) > 0 {
			out.Set(key, strings.Join(kept, ","))
		}
	}
	slices.Sort(removed)
	return out, removed
}
