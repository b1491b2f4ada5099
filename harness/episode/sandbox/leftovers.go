package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/internal/english"
)

// leftoverPrefix starts the names of what an aa-grade process leaves on the machine while it
// runs (its scratch folder, its cgroups), followed by its owner tag.
const leftoverPrefix = "aa-grade-"

// ownerTag names this process in what it leaves behind: its pid and its start time, so that a
// later aa-grade tells a dead owner from a live one even when the pid was reused.
var ownerTag = sync.OnceValue(func() string {
	start, _ := processStart(os.Getpid())
	return fmt.Sprintf("%d-%s", os.Getpid(), start)
})

// ownerDead reports whether the process a leftover's name tags (after the prefix: PID-START,
// maybe followed by more) is gone; names it cannot read count as alive.
func ownerDead(name string) bool {
	parts := strings.SplitN(strings.TrimPrefix(name, leftoverPrefix), "-", 3)
	if len(parts) < 2 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 || !startTime.MatchString(parts[1]) {
		return false // not a name aa-grade gave
	}
	start, err := processStart(pid)
	return err != nil || start != parts[1]
}

// startTime is how processStart writes a start time: digits (Linux's clock ticks), after a
// letter naming the system elsewhere (w: Windows, m: macOS). A Linux aa-grade that shares
// the daemon and came before hostLabel (WSL beside Docker Desktop) reads such a tag as none of
// aa-grade's, and leaves it, instead of taking a Windows pid for one of its own.
var startTime = regexp.MustCompile(`^[a-z]?[0-9]+$`)

// scratchRoot counts this process's scratch folders, under mu.
var scratchRoot struct {
	mu    sync.Mutex
	users int
}

// NewScratch makes a fresh folder for an episode's workspace, inside a folder of this process
// in the temporary folder that a later aa-grade removes if this one dies without doing so.
// remove deletes it, and this process's folder with the last one, so that a process that
// ends cleanly leaves nothing for the next one to clean.
func NewScratch() (dir string, remove func(), err error) {
	root := filepath.Join(os.TempDir(), leftoverPrefix+ownerTag())
	scratchRoot.mu.Lock()
	if scratchRoot.users == 0 {
		if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			scratchRoot.mu.Unlock()
			return "", nil, fmt.Errorf("scratch folder: %w", err)
		}
	}
	scratchRoot.users++
	scratchRoot.mu.Unlock()
	release := func() {
		scratchRoot.mu.Lock()
		defer scratchRoot.mu.Unlock()
		if scratchRoot.users--; scratchRoot.users == 0 {
			_ = os.Remove(root) // fails when not empty: a scratch folder that could not be removed
		}
	}
	if dir, err = os.MkdirTemp(root, "episode-"); err != nil {
		release()
		return "", nil, fmt.Errorf("scratch folder: %w", err)
	}
	// What cannot be removed stays under the run's root, which a later run cleans
	// (CleanLeftovers) once this one has ended.
	return dir, func() { _ = os.RemoveAll(dir); release() }, nil
}

// Leftover is one thing an aa-grade process that died left behind and a later one removed.
type Leftover struct {
	Kind string `json:"kind"` // LeftoverScratch, LeftoverCgroup or LeftoverContainer
	Name string `json:"name"` // the folder's path, or the container's name
}

// The kinds of leftover, as a message names them.
const (
	LeftoverScratch   = "scratch folder"
	LeftoverCgroup    = "cgroup"
	LeftoverContainer = "container"
)

// Leftovers are what CleanLeftovers removed.
type Leftovers []Leftover

// String counts the leftovers by kind: "1 scratch folder and 4 containers".
func (l Leftovers) String() string {
	var parts []string
	for _, kind := range []string{LeftoverScratch, LeftoverCgroup, LeftoverContainer} {
		n := 0
		for _, x := range l {
			if x.Kind == kind {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, english.Count(n, kind))
		}
	}
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// CleanLeftovers removes what aa-grade processes that died without cleaning up (kill -9, a
// crash, a power cut) left behind: scratch folders in the temporary folder, cgroups, whose
// remaining processes it kills first, and docker containers. It returns what it removed.
// Another user's leftovers, which this user may not remove, are left alone.
func CleanLeftovers() Leftovers {
	removed := Leftovers{}
	for _, parent := range append([]string{os.TempDir()}, cgroupParents()...) {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), leftoverPrefix) || !ownerDead(e.Name()) {
				continue
			}
			path := filepath.Join(parent, e.Name())
			if parent != os.TempDir() {
				if removeCgroup(path) == nil {
					removed = append(removed, Leftover{LeftoverCgroup, path})
				}
			} else if os.RemoveAll(path) == nil {
				removed = append(removed, Leftover{LeftoverScratch, path})
			}
		}
	}
	for _, name := range removeDeadContainers() {
		removed = append(removed, Leftover{LeftoverContainer, name})
	}
	return removed
}
