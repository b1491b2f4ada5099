package viewer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// running reports whether a run is being written now: the process its lock file names is
// alive on this machine. The lock itself is not tried: taking it, even for a moment, could
// make a run starting at that moment refuse its folder.
func running(dir string) bool {
	pid, host, ok := runfolder.LockHolder(dir)
	if !ok || pid <= 0 {
		return false
	}
	if me, err := os.Hostname(); err != nil || me != host {
		return false
	}
	return processAlive(pid)
}

// version names the state of the files a page is made from (their sizes and modification
// times), for the ETag a live page polls with: the page is rendered again only when one
// changed.
func version(root *os.Root, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		info, err := root.Stat(name)
		switch {
		case err == nil:
			fmt.Fprintf(&b, "%s %d %d\n", name, info.Size(), info.ModTime().UnixNano())
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(&b, "%s -\n", name)
		default:
			fmt.Fprintf(&b, "%s ?\n", name)
		}
	}
	return b.String()
}

// etag is the ETag of a page made from files in the state versions name.
func etag(versions ...string) string {
	h := sha256.New()
	for _, v := range versions {
		_, _ = io.WriteString(h, v) // a hash's Write never fails
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:12]) + `"`
}
