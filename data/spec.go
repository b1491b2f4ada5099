package data

import (
	"fmt"
	"regexp"
	"strings"
)

// HubSpec names a dataset on the Hub: `hf:OWNER/NAME[@REV]`.
type HubSpec struct {
	Repo     string // OWNER/NAME
	Revision string // branch, tag or commit; default main
}

func (s HubSpec) String() string { return "hf:" + s.Repo + "@" + s.Revision }

var repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseHubSpec reads `hf:OWNER/NAME[@REV]`.
func ParseHubSpec(spec string) (HubSpec, error) {
	rest, ok := strings.CutPrefix(spec, "hf:")
	if !ok {
		return HubSpec{}, fmt.Errorf("%w: %q: expected hf:OWNER/NAME[@REVISION]", ErrNotDataset, spec)
	}
	repo, rev, hasRev := strings.Cut(rest, "@")
	if !repoName.MatchString(repo) || strings.Contains(repo, "..") {
		return HubSpec{}, fmt.Errorf("%w: %q: expected hf:OWNER/NAME[@REVISION]", ErrNotDataset, spec)
	}
	if !hasRev {
		rev = "main"
	}
	if rev == "" || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") {
		return HubSpec{}, fmt.Errorf("%w: %q: bad revision %q", ErrNotDataset, spec, rev)
	}
	return HubSpec{Repo: repo, Revision: rev}, nil
}

// TaskFolder turns a task id as a user writes it into its folder name: `2` and `scenario-2`
// mean `Scenario-2`.
func TaskFolder(id string) string {
	id = strings.TrimSpace(id)
	if id != "" && strings.Trim(id, "0123456789") == "" {
		return "Scenario-" + id
	}
	if n, ok := strings.CutPrefix(strings.ToLower(id), "scenario-"); ok {
		return "Scenario-" + n
	}
	return id
}
