package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	tokenFile := filepath.Join(home, "hf", "token")
	if err := os.MkdirAll(filepath.Dir(tokenFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("hf_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		env                    map[string]string
		endpoint, cache, token string
		offline                bool
	}{
		"defaults":                   {map[string]string{"HOME": home}, DefaultEndpoint, filepath.Join(home, ".cache", "huggingface", "hub"), "", false},
		"xdg":                        {map[string]string{"HOME": home, "XDG_CACHE_HOME": "/x"}, DefaultEndpoint, "/x/huggingface/hub", "", false},
		"hf home and its token file": {map[string]string{"HF_HOME": filepath.Join(home, "hf")}, DefaultEndpoint, filepath.Join(home, "hf", "hub"), "hf_fromfile", false},
		"hub cache wins":             {map[string]string{"HF_HOME": "/h", "HF_HUB_CACHE": "/c", "HUGGINGFACE_HUB_CACHE": "/legacy"}, DefaultEndpoint, "/c", "", false},
		"legacy cache":               {map[string]string{"HF_HOME": "/h", "HUGGINGFACE_HUB_CACHE": "/legacy"}, DefaultEndpoint, "/legacy", "", false},
		"endpoint slash":             {map[string]string{"HF_HOME": "/h", "HF_ENDPOINT": "http://mirror:8080/"}, "http://mirror:8080", "/h/hub", "", false},
		"token order":                {map[string]string{"HF_HOME": filepath.Join(home, "hf"), "HF_TOKEN": "hf_a", "HUGGING_FACE_HUB_TOKEN": "hf_b"}, DefaultEndpoint, filepath.Join(home, "hf", "hub"), "hf_a", false},
		"legacy token":               {map[string]string{"HF_HOME": filepath.Join(home, "hf"), "HUGGING_FACE_HUB_TOKEN": "hf_b"}, DefaultEndpoint, filepath.Join(home, "hf", "hub"), "hf_b", false},
		"token path":                 {map[string]string{"HF_HOME": "/h", "HF_TOKEN_PATH": tokenFile}, DefaultEndpoint, "/h/hub", "hf_fromfile", false},
		"offline":                    {map[string]string{"HF_HOME": "/h", "HF_HUB_OFFLINE": "1"}, DefaultEndpoint, "/h/hub", "", true},
		"offline false":              {map[string]string{"HF_HOME": "/h", "HF_HUB_OFFLINE": "0"}, DefaultEndpoint, "/h/hub", "", false},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ConfigFromEnv(func(k string) string { return c.env[k] })
			got := fmt.Sprintf("endpoint %q, cache %q, token %q, offline %v", cfg.Endpoint, cfg.CacheDir, cfg.Token, cfg.Offline)
			if want := fmt.Sprintf("endpoint %q, cache %q, token %q, offline %v", c.endpoint, c.cache, c.token, c.offline); got != want {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		})
	}
	if cfg := ConfigFromEnv(func(k string) string { return map[string]string{"HF_HUB_DOWNLOAD_TIMEOUT": "2.5"}[k] }); cfg.Timeout != 2500*time.Millisecond {
		t.Fatalf("timeout = %v", cfg.Timeout)
	}
}

func TestNextLink(t *testing.T) {
	base := "https://hub/api/datasets/a/b/tree/main?recursive=true"
	for header, want := range map[string]string{
		`<https://hub/api/datasets/a/b/tree/main?cursor=xyz>; rel="next"`: "https://hub/api/datasets/a/b/tree/main?cursor=xyz",
		`</api/datasets/a/b/tree/main?cursor=2>; rel="next"`:              "https://hub/api/datasets/a/b/tree/main?cursor=2",
		`<https://hub/prev>; rel="prev", <https://hub/next>; rel="next"`:  "https://hub/next",
		`<https://hub/last>; rel="last"`:                                  "",
		"":                                                                "",
	} {
		got, err := nextLink(header, base)
		if err != nil || got != want {
			t.Errorf("nextLink(%q) = %q, %v; want %q", header, got, err, want)
		}
	}
}

func TestRetryAfterAndTransient(t *testing.T) {
	for err, want := range map[error]bool{
		&Error{Status: 429}: true, &Error{Status: 503}: true, &Error{Status: 408}: true,
		&Error{Status: 404, Code: "EntryNotFound"}: false, &Error{Status: 401}: false, &Error{Status: 403, Code: "GatedRepo"}: false,
		io.ErrUnexpectedEOF: true, fmt.Errorf("read: %w", io.ErrUnexpectedEOF): true,
		&net.OpError{Op: "dial", Err: errors.New("connection refused")}: true,
		&net.DNSError{Err: "no such host", IsNotFound: true}:            false,
		context.Canceled: false, errors.New("permission denied"): false,
	} {
		if got := Transient(err); got != want {
			t.Errorf("Transient(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestValidETag(t *testing.T) {
	for s, want := range map[string]bool{
		"5275750c30729511395604fa37280d49f1b1909e":                         true,
		"f73c11ccfa222f67f49bda432c5148dd488e7aacd47ec958831f4bffe0bb4456": true,
		"../../etc/passwd": false, "": false, "5275750C30729511395604FA37280D49F1B1909E": false,
		"5275750c30729511395604fa37280d49f1b1909": false,
	} {
		if validETag(s) != want {
			t.Errorf("validETag(%q) = %v", s, !want)
		}
	}
}
