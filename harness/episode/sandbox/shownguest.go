package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
)

// concealed are the byte strings that no sandbox may see in the guest executable it runs (the
// demo dataset's archive, answers included, that aa-grade embeds): see Conceal.
var (
	concealMu sync.Mutex
	concealed [][]byte
)

// Conceal keeps b out of every sandbox started after it: a sandbox runs, and shows, a copy of
// the guest executable in which b is zeroed. The guest never reads b, so the copy serves as
// well; a command that reads the copy, or its /proc/PID/exe, finds zeros. b must be found
// exactly once in the executable, else no sandbox starts (ErrConcealed).
func Conceal(b []byte) {
	if len(b) == 0 {
		return
	}
	concealMu.Lock()
	defer concealMu.Unlock()
	concealed = append(concealed, b)
}

// ErrConcealed marks a guest executable in which a byte string to conceal is not found exactly
// once: shown to a sandbox, it might hold it still, so none starts.
var ErrConcealed = errors.New("the guest executable cannot be shown to a sandbox")

// shownGuestMode is the copy's mode: executable, readable by nobody. It is blanked anyway; not
// readable, no command can copy it to patch it (its commands have no capability to override
// the mode, even where they run as its owner).
const shownGuestMode = 0o111

// shownGuests are the copies made, by source: one a process.
var shownGuests sync.Map

// shownGuest is the executable a sandbox runs as its guest in place of src: src itself when
// nothing is concealed; else a copy with every concealed string zeroed, in the user's cache
// folder under a name of its content (aa-grade/guest/HASH/aa-grade), made once.
func shownGuest(src string) (string, error) {
	concealMu.Lock()
	secrets := concealed
	concealMu.Unlock()
	if len(secrets) == 0 {
		return src, nil
	}
	if dst, ok := shownGuests.Load(src); ok {
		if _, err := os.Stat(dst.(string)); err == nil {
			return dst.(string), nil
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: a copy of %s without the demo's answers goes in the cache folder: %w", ErrConcealed, src,
			err)
	}
	dst, err := stageGuest(src, filepath.Join(cache, "aa-grade", "guest"))
	if err != nil {
		return "", err
	}
	shownGuests.Store(src, dst)
	return dst, nil
}

// guestSeenAt are the paths where a sandbox would show the guest executable itself, showing
// the host folders ownPath at their own path and the agent folder at agentDirAt (""; at its
// own path, in ownPath): aa-grade installed in /usr/local/bin, or in the agent folder. There
// the sandbox shows its copy instead (shown; none when shown is the guest itself). The
// executable is taken as resolved, the path at which the folders hold it.
func (s *Spec) guestSeenAt(shown string, ownPath []string, agentDirAt string) ([]string, error) {
	if shown == s.Guest {
		return nil, nil
	}
	exe, err := filepath.EvalSymlinks(s.Guest)
	if err != nil {
		return nil, fmt.Errorf("find the guest executable: %w", err)
	}
	var at []string
	for _, dir := range ownPath {
		if kernel.Within(exe, dir) {
			at = append(at, exe)
			break
		}
	}
	if agentDirAt != "" && s.AgentDir != "" && kernel.Within(exe, s.AgentDir) {
		at = append(at, agentDirAt+strings.TrimPrefix(exe, s.AgentDir))
	}
	return at, nil
}

// stageGuest copies the executable src, every concealed string zeroed, into dir under a name
// of the copy's content, unless it is there already, and returns the copy's path. A daemon in
// a virtual machine (Docker Desktop, Colima, OrbStack, Podman machine) binds only files of the
// folders it shares with the host, of which the user's home, holding the cache, is one by
// default; and a downloaded binary may lack its execute bit.
func stageGuest(src, dir string) (string, error) {
	b, err := concealedExecutable(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	dst := filepath.Join(dir, hex.EncodeToString(sum[:8]), "aa-grade")
	if info, err := os.Stat(dst); err == nil && info.Size() == int64(len(b)) && info.Mode().Perm() == shownGuestMode {
		return dst, nil
	}
	if err := atomicfile.WriteFilePerm(dst, b, shownGuestMode); err != nil { // whole and executable, or not there
		return "", fmt.Errorf("copy the guest executable: %w", err)
	}
	return dst, nil
}

// concealedExecutables are the executables concealedExecutable read, by path: once a process.
var concealedExecutables sync.Map

// concealedExecutable is the executable src with every concealed string zeroed, read once: what
// a copy of it holds, and what the docker backend sends the daemon (a copy is readable by no
// one, aa-grade included).
func concealedExecutable(src string) ([]byte, error) {
	b, _, err := concealedExecutableOf(src)
	return b, err
}

// concealedExecutableOf is concealedExecutable and a name of what it returns: the same name,
// the same bytes, in this process.
func concealedExecutableOf(src string) ([]byte, string, error) {
	concealMu.Lock()
	secrets := len(concealed)
	concealMu.Unlock()
	key := fmt.Sprintf("%d|%s", secrets, src) // read again when more is concealed
	if b, ok := concealedExecutables.Load(key); ok {
		return b.([]byte), key, nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, "", fmt.Errorf("read the guest executable: %w", err)
	}
	concealMu.Lock()
	secretsNow := concealed[:secrets]
	concealMu.Unlock()
	for _, secret := range secretsNow {
		if err := blank(b, secret); err != nil {
			return nil, "", fmt.Errorf("%w: %s: %w", ErrConcealed, src, err)
		}
	}
	first, _ := concealedExecutables.LoadOrStore(key, b) // the first read, where two raced
	return first.([]byte), key, nil
}

// blank zeroes secret in b, where it must be exactly once: not there, it may be there in
// another form (compressed, or another build's), which zeroing could not find; twice, a copy
// could stay.
func blank(b, secret []byte) error {
	i := bytes.Index(b, secret)
	if i < 0 {
		return fmt.Errorf("the %d bytes to conceal are not in it (another build's guest?)", len(secret))
	}
	if bytes.Contains(b[i+1:], secret) {
		return fmt.Errorf("the %d bytes to conceal are in it more than once", len(secret))
	}
	clear(b[i : i+len(secret)])
	return nil
}
