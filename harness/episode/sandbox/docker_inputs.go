package sandbox

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/dockerapi"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// The docker backend binds no host path (but Spec.Programs): a daemon in a VM (Docker Desktop,
// a Podman machine) or on another machine (a remote DOCKER_HOST) does not have them. What an
// episode needs goes through the Engine API's archive endpoint into one volume of the run, a
// folder for each guest (with the agent folder) and one for each task (its files), each sent
// by the first episode that needs it and shared, mounted read-only at inputsAt, by the next
// ones; the run removes the volume when it ends (Release; a run that died leaves it to the
// next start). Each episode's container runs the guest from the volume, as nobody from the
// start; before the first command, the guest run a second time as the container's root (an
// exec, with no capability, as the copier: wire.CopiesEnv) copies the task's files into the
// workspace and the agent folder into AgentDirPath. What comes back (the submission, an
// agent's answer) comes through the guest, as with every backend.
const (
	inputsAt       = "/run/aa-grade" // the run's volume, in the container
	inputsGuest    = "agent"         // in a guest's folder, the guest executable
	inputsAgentDir = "agentdir"      // in a guest's folder, Spec.AgentDir's content
)

// inputs are what an episode needs of the run's volume.
type inputs struct {
	files    []snapshotFile
	agentDir string // "" when none
	// agentCovers are the files of the agent folder, relative to it, that are the guest
	// executable itself (aa-grade run from the agent folder): the guest's copy goes there.
	agentCovers map[string]bool
	guest       []byte // the guest executable, as concealedExecutable gives it
	guestID     string // the name concealedExecutableOf gives it
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
	err := in.eachAgentEntry(func(_ string, info fs.FileInfo) { r.add(info.Size()) })
	return r, err
}

// eachAgentEntry calls f with each entry of the agent folder, itself included, and what it
// is (a link's own, not followed).
func (in inputs) eachAgentEntry(f func(path string, info fs.FileInfo)) error {
	err := filepath.WalkDir(in.agentDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f(p, info)
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent folder %s: %w", in.agentDir, err)
	}
	return nil
}

// writeGuest writes, as entries of a tar stream in the folder dir, the guest executable,
// root's and executable only (as on the host), and the agent folder, which the copier copies,
// readable by root alone. dir may be passed through, not read.
func (in inputs) writeGuest(tw *tar.Writer, dir string) error {
	if err := addDir(tw, dir, 0o711, time.Time{}); err != nil {
		return err
	}
	if err := addBytes(tw, path.Join(dir, inputsGuest), in.guest, shownGuestMode); err != nil {
		return err
	}
	if in.agentDir != "" {
		return in.writeAgentDir(tw, path.Join(dir, inputsAgentDir))
	}
	return nil
}

// writeTask writes, as entries of a tar stream in the folder dir, the snapshot's files, root's,
// which the copier copies, readable by root alone.
func (in inputs) writeTask(tw *tar.Writer, dir string) error {
	if err := addDir(tw, dir, 0o700, time.Time{}); err != nil {
		return err
	}
	for _, f := range in.files {
		name := path.Join(dir, filepath.ToSlash(f.rel))
		if err := addParents(tw, dir, name); err != nil {
			return err
		}
		if err := addFile(tw, name, f.host, 0o444); err != nil {
			return err
		}
	}
	return nil
}

// writeAgentDir adds the agent folder as the folder dir, as it is, links included, the guest
// over its own executable where the folder holds it.
func (in inputs) writeAgentDir(tw *tar.Writer, dir string) error {
	return filepath.WalkDir(in.agentDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(in.agentDir, p)
		if err != nil {
			return err
		}
		name := path.Join(dir, filepath.ToSlash(rel))
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
	defer func() { _ = f.Close() }() // read only
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

// runVolume is the volume of a run's inputs, and the container that fills it.
type runVolume struct {
	name   string
	filler string        // the container's id
	ready  chan struct{} // closed once both are made, or failed (err)
	err    error
	// folders are what it holds, by what they hold (guestKey, taskKey); seq numbers them.
	folders map[string]*volumeFolder
	seq     int
}

// volumeFolder is a folder of the run's volume, shared by the episodes that need the same.
type volumeFolder struct {
	name  string
	ready chan struct{} // closed once filled, or failed (err)
	err   error
}

var volumeSeq atomic.Int64

// inputsVolume is the run's volume, made with the container that fills it by the first
// episode, the next ones waiting for that.
func (d *Docker) inputsVolume(ctx context.Context) (*runVolume, error) {
	d.volumeMu.Lock()
	v, found := d.volume, d.volume != nil
	if !found {
		v = &runVolume{name: fmt.Sprintf("%s%s-inputs-%d", leftoverPrefix, ownerTag(), volumeSeq.Add(1)),
			ready: make(chan struct{}), folders: map[string]*volumeFolder{}}
		d.volume = v
	}
	d.volumeMu.Unlock()
	if !found {
		if v.filler, v.err = d.makeVolume(ctx, v.name); v.err != nil {
			d.volumeMu.Lock()
			d.volume = nil // the next episode tries again; those waiting fail with this one
			d.volumeMu.Unlock()
		}
		close(v.ready)
	}
	select {
	case <-v.ready:
		return v, v.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// makeVolume makes the volume named name and the container that fills it, created for that
// and never started (the archive endpoint writes only into a container); it returns the
// container's id.
func (d *Docker) makeVolume(ctx context.Context, name string) (string, error) {
	volume := map[string]any{"Name": name, "Driver": "local", "Labels": ownerLabels()}
	if _, err := d.client.Do(ctx, http.MethodPost, "/volumes/create", volume, nil); err != nil {
		return "", fmt.Errorf("create the run's volume: %w", err)
	}
	filler := map[string]any{
		"Image": d.imageName(), "Entrypoint": []string{guestPath}, "Labels": ownerLabels(), "NetworkDisabled": true,
		"HostConfig": map[string]any{"NetworkMode": "none", "LogConfig": map[string]any{"Type": "none"},
			"Mounts": []map[string]any{{"Type": "volume", "Source": name, "Target": inputsAt}}},
	}
	var created struct{ ID string }
	if _, err := d.client.Do(ctx, http.MethodPost, "/containers/create?name="+name+"-fill", filler, &created); err != nil {
		removeVolume(d.client, name)
		return "", fmt.Errorf("create the container that fills the run's volume: %w", err)
	}
	return created.ID, nil
}

// folderFor is the folder of the run's volume that holds what write writes (kind names it: g
// for a guest, t for a task), which key names: sent by the first episode that needs it, the
// next ones waiting for that, then shared until release.
func (d *Docker) folderFor(
	ctx context.Context, v *runVolume, kind, key string, write func(tw *tar.Writer, dir string) error,
) (string, error) {
	d.volumeMu.Lock()
	f, found := v.folders[key]
	if !found {
		v.seq++
		f = &volumeFolder{name: fmt.Sprintf("%s%d", kind, v.seq), ready: make(chan struct{})}
		v.folders[key] = f
	}
	d.volumeMu.Unlock()
	if !found {
		if f.err = d.send(ctx, v, f.name, write); f.err != nil {
			// The next episode tries again, into a new folder; those waiting fail with this one.
			d.volumeMu.Lock()
			delete(v.folders, key)
			d.volumeMu.Unlock()
		}
		close(f.ready)
	}
	select {
	case <-f.ready:
		return f.name, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// send streams what write writes in the folder dir into the run's volume.
func (d *Docker) send(
	ctx context.Context, v *runVolume, dir string, write func(tw *tar.Writer, dir string) error,
) error {
	r, w := io.Pipe()
	go func() {
		tw := tar.NewWriter(w)
		err := write(tw, dir)
		if err == nil {
			err = tw.Close()
		}
		w.CloseWithError(err)
	}()
	err := d.client.PutArchive(ctx, v.filler, inputsAt, r)
	_ = r.CloseWithError(err) // ends the writer when the daemon stopped reading; the pipe's error is err
	if err != nil {
		return fmt.Errorf("send the episode's files to the daemon: %w", err)
	}
	return nil
}

// release removes the run's volume and the container that fills it: the run's episodes are
// over. A volume still in use (an episode's container not yet removed) waits for the next
// start.
func (d *Docker) release() {
	d.volumeMu.Lock()
	v := d.volume
	d.volume = nil
	var sending []*volumeFolder
	if v != nil {
		for _, f := range v.folders {
			sending = append(sending, f)
		}
	}
	d.volumeMu.Unlock()
	if v == nil {
		return
	}
	<-v.ready
	for _, f := range sending {
		<-f.ready
	}
	if v.err == nil {
		removeContainer(d.client, v.filler)
		removeVolume(d.client, v.name)
	}
}

// removeVolume removes a volume of aa-grade's.
func removeVolume(client *dockerapi.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Nothing more to do when it fails: the next start removes what a dead run left.
	_, _ = client.Do(ctx, http.MethodDelete, "/volumes/"+url.PathEscape(name), nil, nil)
}

// guestKey names what writeGuest writes: the guest, and each file of the agent folder by its
// path, mode, size, time and target, so that a folder changed during the run is sent again.
func (in inputs) guestKey() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "guest %q\n", in.guestID)
	if in.agentDir != "" {
		fmt.Fprintf(h, "agent folder %q\n", in.agentDir)
		err := in.eachAgentEntry(func(p string, info fs.FileInfo) {
			target, _ := os.Readlink(p) // "" but for a link
			fmt.Fprintf(h, "%q %v %d %d %q\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano(), target)
		})
		if err != nil {
			return "", err
		}
	}
	return "guest " + hex.EncodeToString(h.Sum(nil)), nil
}

// taskKey names what writeTask writes: each file by its path, size and time, so that a file
// changed during the run is sent again.
func (in inputs) taskKey() string {
	h := sha256.New()
	for _, f := range in.files {
		fmt.Fprintf(h, "%q %q %d %d\n", f.rel, f.host, f.size, f.mtime.UnixNano())
	}
	return "task " + hex.EncodeToString(h.Sum(nil))
}

// copyInputs has the guest (guestDir's), run as the copier (wire.CopiesEnv) by the container's
// root with no capability, copy the task's files (taskDir) and the agent folder from the run's
// volume into the running container id, before its first command.
func (d *Docker) copyInputs(ctx context.Context, id, guestDir, taskDir string, in inputs, guestArg []string) error {
	copies := []wire.Copy{{From: path.Join(inputsAt, taskDir), To: ReferenceWorkdir, Sticky: true}}
	if in.agentDir != "" {
		copies = append(copies, wire.Copy{From: path.Join(inputsAt, guestDir, inputsAgentDir), To: AgentDirPath})
	}
	env, err := wire.EncodeCopies(copies)
	if err != nil {
		return err
	}
	guest := path.Join(inputsAt, guestDir, inputsGuest)
	code, out, err := d.client.Exec(ctx, id, "0:0", []string{env}, append([]string{guest}, guestArg...))
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(out))
	}
	if err != nil {
		return fmt.Errorf("copy the task's files into the episode's container: %w", err)
	}
	return nil
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
