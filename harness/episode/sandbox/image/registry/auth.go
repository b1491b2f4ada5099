package registry

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Credentials are a user name and password for one registry.
type Credentials struct{ Username, Password string }

// DockerConfigCredentials reads the credentials `docker login` stored for host in
// $DOCKER_CONFIG/config.json (~/.docker/config.json): the `auths` entries only, as
// base64 user:password or username and password. Credential helpers (credsStore,
// credHelpers) are not run; with one, a registry is pulled from anonymously.
func DockerConfigCredentials(host string) (Credentials, bool) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Credentials{}, false
		}
		dir = filepath.Join(home, ".docker")
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return Credentials{}, false
	}
	var config struct {
		Auths map[string]struct{ Auth, Username, Password string }
	}
	if json.Unmarshal(b, &config) != nil {
		return Credentials{}, false
	}
	for key, a := range config.Auths {
		if configHost(key) != host && !(host == "docker.io" && configHost(key) == "index.docker.io") {
			continue
		}
		if a.Auth != "" {
			decoded, err := base64.StdEncoding.DecodeString(a.Auth)
			user, password, ok := strings.Cut(string(decoded), ":")
			if err != nil || !ok {
				return Credentials{}, false
			}
			return Credentials{user, password}, true
		}
		if a.Username != "" {
			return Credentials{a.Username, a.Password}, true
		}
	}
	return Credentials{}, false
}

// configHost is the host of a config.json key: "registry.example:5000", or a URL such as
// "https://index.docker.io/v1/".
func configHost(key string) string {
	if u, err := url.Parse(key); err == nil && u.Host != "" {
		return u.Host
	}
	return strings.TrimSuffix(key, "/")
}

// challenge is a WWW-Authenticate header: its scheme and parameters.
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenge reads `Bearer realm="https://auth.example/token",service="registry",
// scope="repository:a/b:pull"` (quoted values may hold commas).
func parseChallenge(h string) challenge {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	c := challenge{scheme: strings.ToLower(scheme), params: map[string]string{}}
	for rest = strings.TrimSpace(rest); rest != ""; {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var value string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				break
			}
			value, after = after[1:1+end], after[2+end:]
		} else {
			value, after, _ = strings.Cut(after, ",")
			after = "," + after
		}
		c.params[key] = value
		rest = strings.TrimLeft(after, ", ")
	}
	return c
}

// errUnauthorized is a registry that refuses the credentials, or anonymous access.
var errUnauthorized = errors.New("unauthorized")

// authorize answers a 401's challenge: the Authorization header to send again, or an error.
// A Bearer challenge is met with a token from its realm, asked for with the credentials when
// there are some and anonymously when not; a Basic one with the credentials.
func (c *Client) authorize(ctx context.Context, ref Reference, header string) (string, error) {
	ch := parseChallenge(header)
	creds, haveCreds := c.credentials(ref.Registry)
	switch ch.scheme {
	case "basic":
		if !haveCreds {
			return "", errUnauthorized
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password)), nil
	case "bearer":
	default:
		return "", fmt.Errorf("%w: the registry asks for %q authentication, which aa-grade does not speak", errUnauthorized,
			ch.scheme)
	}
	realm, err := url.Parse(ch.params["realm"])
	if err != nil || realm.Host == "" {
		return "", fmt.Errorf("the registry's token realm %q is no URL", ch.params["realm"])
	}
	if realm.Scheme != "https" && !(realm.Scheme == "http" && c.plainHTTP(realm.Host)) {
		return "", fmt.Errorf("the registry's token realm %s is not HTTPS", realm.Redacted())
	}
	q := realm.Query()
	if s := ch.params["service"]; s != "" {
		q.Set("service", s)
	}
	q.Set("scope", cmp.Or(ch.params["scope"], "repository:"+ref.Repository+":pull"))
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	if haveCreds {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	resp, err := c.send(req)
	if err != nil {
		return "", fmt.Errorf("token from %s: %w", realm.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return "", errUnauthorized
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token from %s: %s", realm.Host, resp.Status)
	}
	var token struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&token); err != nil {
		return "", fmt.Errorf("token from %s: %w", realm.Host, err)
	}
	t := cmp.Or(token.Token, token.AccessToken)
	if t == "" {
		return "", fmt.Errorf("token from %s: the answer holds no token", realm.Host)
	}
	return "Bearer " + t, nil
}

func (c *Client) credentials(host string) (Credentials, bool) {
	if c.Credentials == nil {
		return Credentials{}, false
	}
	return c.Credentials(host)
}
