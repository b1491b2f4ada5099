package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// ReferenceWorkdir is where the reference sandbox shows the snapshot, and so where bwrap
// shows it.
const ReferenceWorkdir = shellspec.Workdir

// guestPath is where the guest executable appears inside a bwrap sandbox or a container. Its
// name is the one it had before the in-sandbox process was called the guest: the image roots
// earlier versions unpacked (image.MountPoints) hold their mount point there, and a read-only
// root gets no other.
const guestPath = "/run/aa-grade/agent"

// snapshotFile is one file shown in the workspace.
type snapshotFile struct {
	rel   string // relative path in the workspace
	host  string // the real file (the Hub cache's links resolved)
	mode  fs.FileMode
	size  int64
	mtime time.Time
}

// snapshotFiles lists the files of a snapshot, resolved to real files so that only they are
// shown (a cache snapshot is links into a blobs folder that also holds the answer key).
func snapshotFiles(dir string, hide []string) ([]snapshotFile, error) {
	hidden := map[string]bool{}
	for _, h := range hide {
		hidden[filepath.Clean(h)] = true
	}
	var files []snapshotFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if hidden[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		host, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("snapshot file %s: %w", rel, err)
		}
		info, err := os.Stat(host)
		if err != nil || !info.Mode().IsRegular() {
			return nil // not a file: not shown
		}
		files = append(files, snapshotFile{rel: rel, host: host, mode: info.Mode(), size: info.Size(),
			mtime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", dir, err)
	}
	return files, nil
}

// SandboxUID and SandboxGID are who commands run as when aa-grade is root and the backend can
// switch (bwrap): nobody, so that nothing in the sandbox is host root even by accident.
const (
	SandboxUID = 65534
	SandboxGID = 65534
)
