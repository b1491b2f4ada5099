// Package hub is a client for the Hugging Face Hub over plain HTTP and the on-disk cache it
// shares with huggingface_hub (Python) and @huggingface/hub (JavaScript).
package hub

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is what the Hub client and cache take from the environment, following
// huggingface_hub's variables.
type Config struct {
	Endpoint string // HF_ENDPOINT, default https://huggingface.co, no trailing slash
	Token    string // HF_TOKEN, HUGGING_FACE_HUB_TOKEN, or the token file
	CacheDir string // HF_HUB_CACHE, default $HF_HOME/hub
	Offline  bool   // HF_HUB_OFFLINE: no network at all
	// Timeout bounds connecting, waiting for response headers, and a body delivering nothing
	// (HF_HUB_DOWNLOAD_TIMEOUT).
	Timeout time.Duration
	Retry   Retry // backoff of transient failures; DefaultRetry when zero
}

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// ConfigFromEnv reads the configuration; getenv is os.Getenv outside tests.
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{
		Endpoint: strings.TrimRight(getenv("HF_ENDPOINT"), "/"),
		Offline:  isTrue(getenv("HF_HUB_OFFLINE")),
		Timeout:  10 * time.Second,
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if s, err := strconv.ParseFloat(getenv("HF_HUB_DOWNLOAD_TIMEOUT"), 64); err == nil && s > 0 {
		c.Timeout = time.Duration(s * float64(time.Second))
	}
	home := getenv("HF_HOME")
	if home == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			if h := getenv("HOME"); h != "" {
				cache = filepath.Join(h, ".cache")
			} else if h, err := os.UserHomeDir(); err == nil {
				cache = filepath.Join(h, ".cache")
			}
		}
		home = filepath.Join(cache, "huggingface")
	}
	c.CacheDir = getenv("HF_HUB_CACHE")
	if c.CacheDir == "" {
		c.CacheDir = getenv("HUGGINGFACE_HUB_CACHE") // legacy name
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	c.Token = strings.TrimSpace(getenv("HF_TOKEN"))
	if c.Token == "" {
		c.Token = strings.TrimSpace(getenv("HUGGING_FACE_HUB_TOKEN"))
	}
	if c.Token == "" {
		path := getenv("HF_TOKEN_PATH")
		if path == "" {
			path = filepath.Join(home, "token")
		}
		if b, err := os.ReadFile(path); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	return c
}

// isTrue reads a boolean environment value the way huggingface_hub does.
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
