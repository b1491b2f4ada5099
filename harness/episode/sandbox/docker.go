package sandbox

import (
	"cmp"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/dockerapi"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// NameDocker is the backend that runs each episode in a container of its own.
const NameDocker = "docker"

// DefaultImage is the image an episode runs in when --sandbox-image says nothing: the
// reference environment that deploy/sandbox/Dockerfile builds.
const DefaultImage = "aa-grade-sandbox:latest"

// ownerLabel marks aa-grade's containers and volumes with their owner (see ownerTag), so that
// a later aa-grade removes those of a run that died.
const ownerLabel = "aa-grade.owner"

// hostLabel marks them with the machine and system of their owner (see ownerHost): one daemon
// may serve several machines (a remote DOCKER_HOST), or Windows and Linux on one machine
// (Docker Desktop and WSL, Wine), whose pids mean nothing to one another. Only the owner's
// machine tells whether its run died.
const hostLabel = "aa-grade.host"

// ownerHost names this machine and its system, as hostLabel gives them.
var ownerHost = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return runtime.GOOS + "/" + host
})

// ownerLabels are the labels of what this process makes in the daemon.
func ownerLabels() map[string]string {
	return map[string]string{ownerLabel: ownerTag(), hostLabel: ownerHost()}
}

// deadOwner says whether what carries labels was made by a run of this machine that died;
// without hostLabel, by an aa-grade before it had one, it is judged by its owner alone.
func deadOwner(labels map[string]string) bool {
	if host, ok := labels[hostLabel]; ok && host != ownerHost() {
		return false
	}
	return ownerDead(leftoverPrefix + labels[ownerLabel])
}

// Docker isolates each episode in a container, through the Docker Engine API at DOCKER_HOST
// (unix:///var/run/docker.sock by default; Podman, Colima, OrbStack and Docker Desktop serve
// the same API): no network, a read-only root file system, the snapshot files copied
// read-only into a tmpfs workspace at /home/user from a volume of the run sent through the
// API (docker_inputs.go), /tmp a tmpfs, nobody as the user, no capability,
// no-new-privileges, and pids, memory and CPU limits. The guest (a Linux build of aa-grade,
// in that volume) is the container's only process at first, pid 1 of its pid namespace, and
// serves every command over the attached stdin and stdout, so a command costs what it costs
// in the other backends, not a docker exec. The container is removed when the episode ends,
// the volume when the run does (Release); those of a run that died are found by label and
// removed at the next start.
type Docker struct {
	// Image is the image episodes run in (DefaultImage when empty).
	Image string

	once   sync.Once
	client *dockerapi.Client
	err    error
	arch   string // the daemon's machine, as GOARCH names it

	mu     sync.Mutex
	digest string // the image's config digest, once checked

	volumeMu sync.Mutex
	volume   *runVolume // the episodes' inputs (docker_inputs.go), nil until the first episode
}

func (d *Docker) Name() string { return NameDocker }

// Available asks the daemon, once, for its version: it must run Linux containers.
func (d *Docker) Available() error {
	d.once.Do(func() {
		d.client, d.err = dockerapi.New()
		if d.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var version struct{ Os, Arch string }
		_, err := d.client.Do(ctx, http.MethodGet, "/version", nil, &version)
		switch {
		case errors.Is(err, os.ErrPermission):
			d.err = fmt.Errorf(
				"the Docker daemon at %s refuses this user (add it to the docker group, or set DOCKER_HOST to a daemon it may use)",
				d.client.Host)
		case err != nil:
			d.err = fmt.Errorf("no Docker daemon answers at %s: %w (start Docker, or set DOCKER_HOST)", d.client.Host, err)
		case version.Os != "linux":
			d.err = fmt.Errorf("the Docker daemon at %s runs %s containers (switch it to Linux containers)", d.client.Host,
				version.Os)
		}
		d.arch = cmp.Or(version.Arch, runtime.GOARCH)
	})
	return d.err
}

func (d *Docker) imageName() string {
	if d.Image == "" {
		return DefaultImage
	}
	return d.Image
}

func (d *Docker) image() (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.imageName(), d.digest
}

var containerSeq atomic.Int64

// Start creates the episode's container, attaches to its guest and starts it.
func (d *Docker) Start(ctx context.Context, spec Spec) (Sandbox, error) {
	if err := d.Available(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	guest, err := linuxGuest(spec.Guest, d.arch)
	if err != nil {
		return nil, err
	}
	exe, exeID, err := concealedExecutableOf(guest)
	if err != nil {
		return nil, err
	}
	if err := d.checkImage(ctx); err != nil {
		return nil, err
	}
	files, err := snapshotFiles(spec.Snapshot, spec.Hide)
	if err != nil {
		return nil, err
	}
	// The container never runs the host's file: wherever a folder it shows holds it, it shows
	// the guest sent (the agent folder's copy) or a copy bound from the host (programs).
	covers, err := spec.guestSeenAt("", spec.Programs, "")
	if err == nil && len(covers) > 0 {
		guest, err = shownGuest(guest)
	}
	if err != nil {
		return nil, err
	}
	inAgentDir, err := spec.guestSeenAt("", nil, AgentDirPath)
	if err != nil {
		return nil, err
	}
	in := inputs{files: files, agentDir: spec.AgentDir, agentCovers: agentCovers(inAgentDir), guest: exe, guestID: exeID}
	key, err := in.guestKey()
	if err != nil {
		return nil, err
	}
	volume, err := d.inputsVolume(ctx)
	if err != nil {
		return nil, err
	}
	guestDir, err := d.folderFor(ctx, volume, "g", key, in.writeGuest)
	if err != nil {
		return nil, err
	}
	taskDir, err := d.folderFor(ctx, volume, "t", in.taskKey(), in.writeTask)
	if err != nil {
		return nil, err
	}
	config, err := d.containerConfig(spec, volume.name, guestDir, guest, in, covers)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s%s-%d", leftoverPrefix, ownerTag(), containerSeq.Add(1))
	var created struct{ ID string }
	endpoint := "/containers/create?name=" + url.QueryEscape(name)
	if _, err := d.client.Do(ctx, http.MethodPost, endpoint, config, &created); err != nil {
		return nil, fmt.Errorf("create the episode's container from %s: %w", d.imageName(), err)
	}
	c := &container{client: d.client, id: created.ID, exited: make(chan struct{})}
	stream, err := d.client.Attach(ctx, c.id)
	if err != nil {
		c.remove()
		return nil, fmt.Errorf("attach to the episode's container: %w", err)
	}
	if _, err := d.client.Do(ctx, http.MethodPost, "/containers/"+c.id+"/start", nil, nil); err != nil {
		_ = stream.Close() // the start's failure is the one to tell
		c.remove()
		return nil, fmt.Errorf("start the episode's container: %w", err)
	}
	stdoutR, stdoutW := io.Pipe()
	stderr := &boundedBuffer{limit: 16 << 10}
	go func() {
		err := dockerapi.Demux(stream, stdoutW, stderr)
		stdoutW.CloseWithError(err) // nil reads as EOF
		close(c.exited)
	}()
	s := newSession(c, guestInput{stream}, stdoutR, stderr, ReferenceWorkdir, spec.Relay)
	if spec.AgentDir != "" {
		s.agentDir = AgentDirPath
	}
	// The image must run the guest and have bash: find out now, with one clear message.
	if err := tryShell(ctx, s, d.imageName(), d.arch, guest); err != nil {
		_ = s.Close()   // the image's fault is the one to tell
		return nil, err // ErrImageUnusable, or ctx's error
	}
	// The task's files, before the model's first command.
	if err := d.copyInputs(ctx, c.id, guestDir, taskDir, in, spec.GuestArg); err != nil {
		_ = s.Close() // the copy's failure is the one to tell
		return nil, err
	}
	return s, nil
}

// containerConfig is the episode's container, as the Engine API takes it, with its inputs in
// the volume named volume, its guest in the folder guestDir of it. covers are where its
// programs would show the guest executable itself: the guest's copy is bound there too.
func (d *Docker) containerConfig(
	spec Spec, volume, guestDir, guest string, in inputs, covers []string,
) (map[string]any, error) {
	limits := spec.Limits
	disk, inodes := limits.disk(), limits.inodes()
	env := spec.Env
	if env == nil {
		env = CleanEnv(ReferenceWorkdir)
	}
	// The container already has no capability and no network; the guest still sets its
	// syscall filter and no_new_privs, and kills all (it is pid 1) when its input ends.
	confine, err := wire.Confinement{Workdir: ReferenceWorkdir, DropCaps: true, Seccomp: true, KillAll: true,
		ProcessesBounded: true, RelayPort: spec.relayPort()}.Encode()
	if err != nil {
		return nil, err
	}
	mounts := []map[string]any{{"Type": "volume", "Source": volume, "Target": inputsAt, "ReadOnly": true}}
	for _, p := range spec.shown() {
		if p.at != AgentDirPath { // the agent folder is copied (inputs)
			mounts = append(mounts, map[string]any{"Type": "bind", "Source": p.host, "Target": p.at, "ReadOnly": true})
		}
	}
	for _, at := range covers {
		mounts = append(mounts, map[string]any{"Type": "bind", "Source": guest, "Target": at, "ReadOnly": true})
	}
	// The workspace is root's and sticky, so that commands add files beside the task's but
	// cannot remove or rename them; it has room for them on top of the disk limit.
	task := in.taskRoom()
	tmpfs := map[string]string{
		ReferenceWorkdir: fmt.Sprintf("size=%d,nr_inodes=%d,uid=0,gid=0", disk+task.bytes, inodes+task.files),
		"/tmp": fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777,uid=%d,gid=%d",
			disk, inodes, SandboxUID, SandboxGID),
		"/dev/pts": "ro,size=4k,nr_inodes=16,mode=0755",
	}
	memory := limits.memory() + disk + task.bytes
	if in.agentDir != "" {
		agent, err := in.agentRoom()
		if err != nil {
			return nil, err
		}
		tmpfs[AgentDirPath] = fmt.Sprintf("exec,size=%d,nr_inodes=%d,mode=0755,uid=0,gid=0", agent.bytes, agent.files)
		memory += agent.bytes
	}
	return map[string]any{
		"Image":      d.imageName(),
		"Entrypoint": []string{path.Join(inputsAt, guestDir, inputsGuest)},
		"Cmd":        append([]string{}, spec.GuestArg...),
		// nobody from the start; only the copier (copyInputs) runs as root, without capability
		"User":       fmt.Sprintf("%d:%d", SandboxUID, SandboxGID),
		"WorkingDir": ReferenceWorkdir,
		"Env":        append(env[:len(env):len(env)], confine),
		"Hostname":   "sandbox",
		"OpenStdin":  true, "StdinOnce": true, "AttachStdin": true, "AttachStdout": true, "AttachStderr": true,
		"NetworkDisabled": true,
		"Labels":          ownerLabels(),
		"HostConfig": map[string]any{
			"NetworkMode":    "none",
			"ReadonlyRootfs": true,
			"CapDrop":        []string{"ALL"},
			"SecurityOpt":    []string{"no-new-privileges"},
			// The tmpfs' pages count with the processes', as in bwrap: a full workspace is
			// "No space left on device", not a sandbox without memory.
			"Memory":     memory,
			"MemorySwap": memory,
			"PidsLimit":  wire.MaxProcesses,
			"NanoCpus":   int64(dockerCPUs * 1e9),
			// No pty: an empty read-only /dev/pts instead of the daemon's devpts, whose pool the
			// whole host shares. (/dev is the daemon's small tmpfs that only root may write;
			// /dev/shm, counted in the container's memory, holds no more than the disk limit.)
			"ShmSize": min(disk, dockerShmBytes),
			"Tmpfs":   tmpfs,
			"Mounts":  mounts,
			"IpcMode": "private",
			// The guest's stdout carries every command's output and the relay's traffic: the
			// daemon keeps none of it (a json-file log would grow on the host's disk, outside
			// the episode's limits, until the container is removed).
			"LogConfig": map[string]any{"Type": "none"},
		},
	}, nil
}

// dockerShmBytes is the daemon's default size of /dev/shm, which a smaller disk limit lowers.
const dockerShmBytes = 64 << 20

// dockerCPUs bounds the CPU an episode's container may use.
const dockerCPUs = 2

// imageInfo is what the daemon says of an image.
type imageInfo struct {
	ID           string `json:"Id"`
	Architecture string
	Os           string
}

// inspect asks the daemon about the image; a *dockerapi.Error with 404 when it lacks it.
func (d *Docker) inspect(ctx context.Context) (imageInfo, error) {
	var image imageInfo
	segments := strings.Split(d.imageName(), "/")
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	_, err := d.client.Do(ctx, http.MethodGet, "/images/"+strings.Join(segments, "/")+"/json", nil, &image)
	return image, err
}

// checkImage says, in one line, what to do when the image is missing or for another machine
// (ErrImageUnusable); a daemon that cannot be asked is ErrUnavailable.
func (d *Docker) checkImage(ctx context.Context) error {
	image, err := d.inspect(ctx)
	if err != nil {
		var status *dockerapi.Error
		if errors.As(err, &status) && status.Code == http.StatusNotFound {
			if d.imageName() != DefaultImage {
				return imageError{fmt.Errorf("%w %s: pull or build it (docker pull %s)", ErrNoImage, d.imageName(), d.imageName())}
			}
			return imageError{
				fmt.Errorf("%w %s: build it (docker build -t %s deploy/sandbox)", ErrNoImage, d.imageName(), DefaultImage)}
		}
		return fmt.Errorf("%w: image %s: %w", ErrUnavailable, d.imageName(), err)
	}
	if image.Os != "" && image.Os != "linux" || image.Architecture != "" && image.Architecture != d.arch {
		return imageError{
			fmt.Errorf("image %s is for %s/%s, not linux/%s", d.imageName(), image.Os, image.Architecture, d.arch)}
	}
	d.mu.Lock()
	d.digest = image.ID
	d.mu.Unlock()
	return nil
}

// linuxGuest is the Linux build of aa-grade the container runs as its guest, for the daemon's
// architecture: this executable on Linux when it matches; else a Linux build of the same
// version (make dist writes aa-grade-linux-ARCH) found beside this executable or named by
// AA_GRADE_LINUX_GUEST (or its older name, AA_GRADE_LINUX_AGENT, still read). What is
// concealed is zeroed in what the daemon gets of it (see concealedExecutable).
func linuxGuest(self, arch string) (string, error) {
	if runtime.GOOS == "linux" && arch == runtime.GOARCH {
		return self, nil
	}
	src := cmp.Or(os.Getenv("AA_GRADE_LINUX_GUEST"), os.Getenv("AA_GRADE_LINUX_AGENT"),
		filepath.Join(filepath.Dir(self), "aa-grade-linux-"+arch))
	if err := checkLinuxProgram(src, arch); err != nil {
		return "", fmt.Errorf("%w: the docker sandbox runs a Linux build of aa-grade inside the container (%v): "+
			"put aa-grade-linux-%s (from the release, or make dist) beside %s, or name it in AA_GRADE_LINUX_GUEST",
			ErrUnavailable, err, arch, self)
	}
	return src, nil
}

// elfMachines are the architectures releases are built for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkLinuxProgram checks that src is a Linux program for arch.
func checkLinuxProgram(src, arch string) error {
	f, err := elf.Open(src)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	machine := f.Machine
	_ = f.Close() // read only
	if want, ok := elfMachines[arch]; !ok || machine != want {
		return fmt.Errorf("%s is a program for %v, not linux/%s", src, machine, arch)
	}
	return nil
}

// container is a sandbox that is a container: the session's peer.
type container struct {
	client *dockerapi.Client
	id     string
	exited chan struct{} // closed once the attached stream ended: the guest is gone
	once   sync.Once
}

func (c *container) beforeClose() {}

// kill removes the container at once: its processes die with its pid namespace.
func (c *container) kill()                 { c.remove() }
func (c *container) done() <-chan struct{} { return c.exited }
func (c *container) cleanup()              { c.remove() }
func (c *container) outOfMemory() bool     { return false }

// remove removes the container (the task's volume stays for the run's other episodes).
func (c *container) remove() { c.once.Do(func() { removeContainer(c.client, c.id) }) }

// removeContainer removes a container, whatever it is doing.
func removeContainer(client *dockerapi.Client, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Nothing more to do when it fails: the next start removes what a dead run left.
	_, _ = client.Do(ctx, http.MethodDelete, "/containers/"+id+"?force=1&v=1", nil, nil)
}

// removeDeadContainers removes the containers of aa-grade runs of this machine that died; it
// returns their names. Nothing is done when no daemon answers at once.
func removeDeadContainers() []string {
	c, err := dockerapi.New()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	filters, _ := json.Marshal(map[string][]string{"label": {ownerLabel}})
	var list []struct {
		ID     string
		Names  []string
		Labels map[string]string
	}
	if _, err := c.Do(ctx, http.MethodGet, "/containers/json?all=1&filters="+url.QueryEscape(string(filters)), nil,
		&list); err != nil {
		return nil
	}
	var removed []string
	for _, ct := range list {
		if !deadOwner(ct.Labels) {
			continue
		}
		if _, err := c.Do(ctx, http.MethodDelete, "/containers/"+ct.ID+"?force=1&v=1", nil, nil); err == nil {
			removed = append(removed, strings.TrimPrefix(strings.Join(ct.Names, ","), "/"))
		}
	}
	removeDeadVolumes(ctx, c, string(filters))
	return removed
}

// removeDeadVolumes removes the volumes (docker_inputs.go) of aa-grade runs of this machine
// that died, once their containers are gone: they go with their containers, so they are not
// told apart.
func removeDeadVolumes(ctx context.Context, c *dockerapi.Client, filters string) {
	var list struct {
		Volumes []struct {
			Name   string
			Labels map[string]string
		}
	}
	if _, err := c.Do(ctx, http.MethodGet, "/volumes?filters="+url.QueryEscape(filters), nil, &list); err != nil {
		return
	}
	for _, v := range list.Volumes {
		if deadOwner(v.Labels) {
			// One still in use, or gone meanwhile, waits for the next start.
			_, _ = c.Do(ctx, http.MethodDelete, "/volumes/"+url.PathEscape(v.Name), nil, nil)
		}
	}
}

// dockerGuarantees are what a container keeps, wherever the daemon runs.
func dockerGuarantees() []Guarantee {
	return []Guarantee{
		{GuaranteeNoInheritedFDs, true,
			"the container's process starts from the daemon, with only its attached stdin, stdout and stderr"},
		hostReadsSafely,
		{GuaranteeNoCapabilities, true, "no capability (cap-drop ALL), no-new-privileges, and the guest's own filter"},
		{GuaranteeNotHostRoot, true, "commands run as nobody (65534) in the container"},
		{GuaranteeReadOnlySystem, true,
			"a read-only root file system, no pty; the snapshot's files copied root's and read-only; mount refused"},
		{GuaranteeNoNetwork, true, "network mode none, and socket(2) refused; " + relayOpens},
		{GuaranteeProcessesEnd, true,
			"the guest is the container's init and ends, killing all, when its attached input does: at the episode's end, and " +
				"when aa-grade dies; the container is removed at the episode's end, or, for a run that died, stopped and removed " +
				"at the next start"},
		{GuaranteeProcessLimit, true, fmt.Sprintf("%d processes per container", wire.MaxProcesses)},
		{GuaranteeMemoryLimit, true, "the container's memory limit, tmpfs pages included, no swap"},
		{GuaranteeDiskLimit, true, "the workspace and /tmp are tmpfs of --disk-limit bytes each"},
		{GuaranteeInodeLimit, true, "the workspace and /tmp each hold at most one file per 16 KiB of --disk-limit"},
	}
}

// useImage names the image episodes run in. One that names its registry and that the daemon
// lacks is pulled by the daemon now, as docker run would, so that a bad reference is one line
// before anything starts.
func (d *Docker) useImage(ctx context.Context, ref, _ string, progress func(Event)) error {
	d.Image = ref
	reference, err := registry.ParseReference(ref)
	if err != nil {
		return nil // a local name, looked up when the first episode starts
	}
	if err := d.Available(); err != nil {
		return unavailableError{err}
	}
	_, err = d.inspect(ctx)
	var status *dockerapi.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &status) || status.Code != http.StatusNotFound:
		return unavailableError{fmt.Errorf("image %s: %w", ref, err)}
	}
	if progress != nil {
		progress(PullingThroughDaemon{Ref: ref})
	}
	err = d.client.Pull(ctx, reference)
	if errors.As(err, &status) {
		err = errors.New(status.Message)
	}
	switch {
	case err == nil:
		return nil
	case refusedReference(err.Error()):
		return fmt.Errorf("the Docker daemon cannot pull %s: %v (check the name and the tag, or docker login %s)", ref, err,
			reference.Registry)
	}
	return unavailableError{fmt.Errorf(
		"the Docker daemon cannot pull %s: %v (check the registry and the daemon's network, or docker pull it yourself)",
		ref, err)}
}

// refusedReference tells, from the daemon's message, a registry that refused the reference
// (the distribution API's error codes, which the daemon passes on, often as a 500) from one
// it could not reach.
func refusedReference(message string) bool {
	m := strings.ToLower(message)
	for _, code := range []string{"manifest unknown", "name unknown", "not found", "unauthorized", "denied",
		"no matching manifest"} {
		if strings.Contains(m, code) {
			return true
		}
	}
	return false
}

// guestInput is the guest's input: closing it closes only the sending half of the attached
// connection, so the guest sees the end of its input while its last words still come back.
type guestInput struct{ *dockerapi.Conn }

func (a guestInput) Close() error { return a.HalfClose() }
