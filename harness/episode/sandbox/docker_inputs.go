package sandbox

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// The docker backend binds no host path (but Spec.Programs): a daemon in a VM (Docker Desktop,
// a Podman machine) or on another machine (a remote DOCKER_HOST) does not have them. What an
// episode needs goes into a volume of its own through the Engine API's archive endpoint, before
// the container starts; the container mounts it read-only at inputsAt, runs the guest from it,
// and the guest, root for that moment, copies the task's files into the workspace and the
// agent folder into AgentDirPath (wire.Copy). What comes back (the submission, an agent's
// answer) comes through the guest, as with every backend.
const (
	inputsAt       = "/run/aa-grade" // the volume, in the container; the guest is guestPath in it
	inputsTask     = "task"          // the snapshot's files, the ground truth left out
	inputsAgentDir = "agentdir"      // Spec.AgentDir's content
)

// inputs are what an episode's volume holds, besides the guest.
type inputs struct {
	files    []snapshotFile
	agentDir string // "" when none
	// agentCovers are the files of the agent folder, relative to it, that are the guest
	// executable itself (aa-grade run from the agent folder): the guest's copy goes there.
	agentCovers map[string]bool
	guest       []byte // the guest executable, as concealedExecutable gives it
}

// room is what the files copied into one tmpfs take of it: bytes in whole pages, and files.
type room struct{ bytes, files int64 }

func (r *room) add(size int64) {
	r.bytes += (size + 4095) &^ 4095
	r.files++
}

// taskRoom is what the snapshot's files take of the workspace: the workspace gets it on top
// of the disk limit, so the model has the room it had when they were bound.
func (in inputs) taskRoom() room {
	var r room
	dirs := map[string]bool{}
	for _, f := range in.files {
		r.add(f.size)
		for d := path.Dir(filepath.ToSlash(f.rel)); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	r.files += int64(len(dirs))
	return r
}

// agentRoom is what the agent folder takes of its tmpfs (with room for its folders' pages).
func (in inputs) agentRoom() (room, error) {
	r := room{bytes: 64 << 10, files: 16}
	err := filepath.WalkDir(in.agentDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		r.add(info.Size())
		return nil
	})
	if err != nil {
		return room{}, fmt.Errorf("agent folder %s: %w", in.agentDir, err)
	}
	return r, nil
}

// write writes the volume's content as a tar stream: everything root's, the guest executable
// only (as on the host), the folders the guest copies from readable by root alone.
func (in inputs) write(w io.Writer) error {
	tw := tar.NewWriter(w)
	if err := addBytes(tw, path.Base(guestPath), in.guest, shownGuestMode); err != nil {
		return err
	}
	if err := addDir(tw, inputsTask, 0o700, time.Time{}); err != nil {
		return err
	}
	for _, f := range in.files {
		name := path.Join(inputsTask, filepath.ToSlash(f.rel))
		if err := addParents(tw, inputsTask, name); err != nil {
			return err
		}
		if err := addFile(tw, name, f.host, 0o444); err != nil {
			return err
		}
	}
	if in.agentDir != "" {
		if err := in.writeAgentDir(tw); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeAgentDir adds the agent folder as it is, links included, the guest over its own
// executable where the folder holds it.
func (in inputs) writeAgentDir(tw *tar.Writer) error {
	return filepath.WalkDir(in.agentDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(in.agentDir, p)
		if err != nil {
			return err
		}
		name := path.Join(inputsAgentDir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return addDir(tw, name, 0o700, info.ModTime())
		case in.agentCovers[rel]:
			// Readable by root, so that the guest can copy it; the commands, nobody, only run it.
			return addBytes(tw, name, in.guest, shownGuestMode|0o400)
		case info.Mode().IsRegular():
			return addFile(tw, name, p, agentFileMode(info.Mode()))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: filepath.ToSlash(target),
				Mode: 0o777, ModTime: info.ModTime(), Format: tar.FormatPAX})
		}
		return nil // a FIFO or device: not shown, as a bind would show nothing usable
	})
}

// agentFileMode is a file's mode in the container: as on the host, but Windows has no
// execute bits, so there every file of the agent folder may run.
func agentFileMode(m fs.FileMode) int64 {
	if runtime.GOOS == "windows" {
		return 0o555
	}
	return int64(m.Perm()&0o555 | 0o444)
}

// addParents adds the folders between top and name's folder.
func addParents(tw *tar.Writer, top, name string) error {
	var dirs []string
	for d := path.Dir(name); d != top && d != "."; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := addDir(tw, dirs[i], 0o755, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

func addDir(tw *tar.Writer, name string, mode int64, mtime time.Time) error {
	return tw.WriteHeader(
		&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime, Format: tar.FormatPAX},
	)
}

// addBytes adds b as the file name, root's, of mode.
func addBytes(tw *tar.Writer, name string, b []byte, mode int64) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// addFile adds the host file src as name, root's, of mode.
func addFile(tw *tar.Writer, name, src string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     info.Size(),
		ModTime:  info.ModTime(),
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}

// fillVolume makes the episode's volume, named name, and fills it with in through a container
// that is created for it and never started (the archive endpoint writes only into a
// container); the episode's container then mounts it read-only.
func (d *Docker) fillVolume(ctx context.Context, name string, in inputs) error {
	labels := map[string]string{ownerLabel: ownerTag()}
	volume := map[string]any{"Name": name, "Labels": labels}
	if _, err := d.client.Do(ctx, http.MethodPost, "/volumes/create", volume, nil); err != nil {
		return fmt.Errorf("create the episode's volume: %w", err)
	}
	filler := map[string]any{
		"Image": d.imageName(), "Entrypoint": []string{guestPath}, "Labels": labels, "NetworkDisabled": true,
		"HostConfig": map[string]any{"NetworkMode": "none", "LogConfig": map[string]any{"Type": "none"},
			"Mounts": []map[string]any{{"Type": "volume", "Source": name, "Target": inputsAt}}},
	}
	var created struct{ ID string }
	if _, err := d.client.Do(ctx, http.MethodPost, "/containers/create?name="+name+"-fill", filler, &created); err != nil {
		return fmt.Errorf("create the container that fills the episode's volume: %w", err)
	}
	defer removeContainer(d.client, created.ID)
	r, w := io.Pipe()
	go func() { w.CloseWithError(in.write(w)) }()
	err := d.client.PutArchive(ctx, created.ID, inputsAt, r)
	_ = r.CloseWithError(err) // ends the writer when the daemon stopped reading; the pipe's error is err
	if err != nil {
		return fmt.Errorf("send the episode's files to the daemon: %w", err)
	}
	return nil
}

// copies are what the guest copies from the volume.
func (in inputs) copies() []wire.Copy {
	c := []wire.Copy{{From: path.Join(inputsAt, inputsTask), To: ReferenceWorkdir, Sticky: true}}
	if in.agentDir != "" {
		c = append(c, wire.Copy{From: path.Join(inputsAt, inputsAgentDir), To: AgentDirPath})
	}
	return c
}

// agentCovers are the files of the agent folder that are the guest itself, from the paths
// guestSeenAt gives under AgentDirPath.
func agentCovers(at []string) map[string]bool {
	covers := map[string]bool{}
	for _, a := range at {
		covers[filepath.FromSlash(strings.TrimPrefix(a, AgentDirPath+"/"))] = true
	}
	return covers
}
