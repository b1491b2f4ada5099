package registry

import (
	"fmt"
	"regexp"
	"strings"
)

// Reference names an image in a registry: registry.example:5000/aa-grade/sandbox:2026.11, or
// pinned by digest, registry.example:5000/aa-grade/sandbox@sha256:....
type Reference struct {
	Registry   string // host[:port] as written; docker.io for Docker Hub
	Repository string // the path in the registry (library/debian on Docker Hub)
	Tag        string // "latest" when neither a tag nor a digest is given
	Digest     string // sha256:..., which wins over the tag
}

var (
	repositoryPattern = regexp.MustCompile(
		`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	hostPattern   = regexp.MustCompile(
		`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*` +
			`|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?$`)
)

// ParseReference reads a reference that starts with its registry host (a name with a dot or a
// port, or localhost), as Docker's own rule tells a host from a path: "debian:bookworm" alone
// is refused rather than fetched from Docker Hub, so that a mistyped file name never turns into
// a download; docker.io/library/debian:bookworm says it.
func ParseReference(s string) (Reference, error) {
	host, rest, ok := strings.Cut(s, "/")
	if !ok || !IsRegistryHost(host) || !hostPattern.MatchString(host) {
		return Reference{}, fmt.Errorf(
			"%q is no registry reference (one starts with its registry host: registry.example:5000/name:tag, "+
				"docker.io/library/debian:bookworm)", s)
	}
	r := Reference{Registry: host}
	if name, digest, ok := strings.Cut(rest, "@"); ok {
		if !digestPattern.MatchString(digest) {
			return Reference{}, fmt.Errorf("%q: the digest is not sha256: and 64 hexadecimal digits", s)
		}
		rest, r.Digest = name, digest
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		if !tagPattern.MatchString(rest[i+1:]) {
			return Reference{}, fmt.Errorf("%q: %q is not a valid tag", s, rest[i+1:])
		}
		rest, r.Tag = rest[:i], rest[i+1:]
	}
	if !repositoryPattern.MatchString(rest) {
		return Reference{}, fmt.Errorf("%q: %q is not a valid repository name (lower-case letters, digits, . _ - and /)", s,
			rest)
	}
	r.Repository = rest
	if r.Registry == "docker.io" && !strings.Contains(r.Repository, "/") {
		r.Repository = "library/" + r.Repository
	}
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}
	return r, nil
}

// IsRegistryHost says whether the first part of an image name is a registry host, by Docker's
// rule: it holds a dot or a port, or is localhost.
func IsRegistryHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost"
}

// String is the reference in its usual form; a digest stands for the tag.
func (r Reference) String() string {
	if r.Digest != "" {
		return r.Registry + "/" + r.Repository + "@" + r.Digest
	}
	return r.Registry + "/" + r.Repository + ":" + r.Tag
}

// object is what the registry is asked for: the digest, else the tag.
func (r Reference) object() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// apiHost is where the registry's API answers: Docker Hub's is not docker.io itself.
func (r Reference) apiHost() string {
	if r.Registry == "docker.io" {
		return "registry-1.docker.io"
	}
	return r.Registry
}
