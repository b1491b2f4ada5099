//go:build linux

package guest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// Limits the guest sets on itself, and so on every command: a fork bomb, a runaway process
// or a disk-filling loop stop at these. RLIMIT_NPROC is left out where a pids cgroup bounds
// the sandbox: it counts every process of the user, and with aa-grade as root every sandbox
// runs as nobody, so one episode's fork bomb would stop the others.
var guestLimits = []struct {
	resource int
	value    uint64
}{
	{unix.RLIMIT_NPROC, wire.MaxProcesses},
	{unix.RLIMIT_AS, 8 << 30},
	{unix.RLIMIT_FSIZE, 2 << 30},
	{unix.RLIMIT_CORE, 0},
}

// Run serves requests from in until it closes, answering each on out. It runs inside the
// sandbox, in the workspace, and first confines itself as aa-grade asked. Run as the docker
// backend's copier (wire.CopiesEnv), it only copies.
func Run(in io.Reader, out io.Writer) error {
	if asked, err := runCopies(); asked {
		return err
	}
	kernel.CloseInheritedOnExec()
	confine, err := readConfinement()
	if err != nil {
		return err
	}
	var guard *oomGuard
	var relayListener net.Listener
	if confine != nil {
		if guard, relayListener, err = apply(confine); err != nil {
			return err
		}
		// A command may not stop the guest with a polite signal (SIGKILL it can, in some
		// backends, which only ends its own episode). Caught, not ignored: commands start with
		// the default dispositions.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	for _, l := range guestLimits {
		if l.resource == unix.RLIMIT_NPROC && confine != nil && confine.ProcessesBounded {
			continue
		}
		lim := unix.Rlimit{Cur: l.value, Max: l.value}
		_ = unix.Setrlimit(l.resource, &lim) // best effort: a lower hard limit stays
	}
	reserveThreads()
	// Orphans of a command (its background jobs) become the guest's children, so that it can
	// reap them once killed instead of leaving zombies behind.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	workspace, err := os.OpenRoot(".")
	if err != nil {
		return fmt.Errorf("open the workspace: %w", err)
	}
	defer func() { _ = workspace.Close() }() // a folder handle: nothing pending
	inputEnded := watchInput(in)
	lines := wire.NewLineWriter(out)
	var relay *wire.Mux
	if relayListener != nil {
		slots := make(chan struct{}, wire.RelayMaxConns)
		relay = wire.NewOpener(func(f wire.Frame) error { return lines.WriteLine(wire.RelayLine{Relay: &f}) },
			confine.RelayPort, func() { <-slots })
		go serveRelay(relayListener, relay, slots)
	}
	requests, inputFailed := readInput(in, relay)
	var failure error
	for req := range requests {
		var answer any
		switch req.Op {
		case wire.OpRun:
			answer = runCommand(req.Cmd, req.Timeout, inputEnded, guard)
		case wire.OpRead:
			answer = readFile(workspace, req.Name, req.Limit)
		case wire.OpCheck:
			answer = checkFile(workspace, req.Name)
		default:
			answer = wire.FileAnswer{Error: fmt.Sprintf("unknown request %q", req.Op)}
		}
		if closed(inputEnded) {
			break // nobody reads the answer any more (and writing it could end the guest)
		}
		if err := lines.WriteLine(wire.Reply{ID: req.ID, Answer: answer}); err != nil {
			failure = err
			break
		}
	}
	if failure == nil {
		failure = inputFailed()
	}
	if confine != nil && confine.KillAll {
		// Only from this thread, which Landlock restricts: the guest's other threads are not
		// confined, and kill(-1) from one of them would reach every process of the user.
		_ = unix.Kill(-1, unix.SIGKILL) // ESRCH: nothing left to kill
	}
	return failure
}

// readInput reads aa-grade's lines from in, handing requests to the loop that serves them
// (one at a time: aa-grade sends the next after the reply) and relay frames to relay, so
// that frames flow while a command runs. The channel closes when the input ends; then
// failed says why, if not at its end.
func readInput(in io.Reader, relay *wire.Mux) (requests <-chan wire.Request, failed func() error) {
	c := make(chan wire.Request, 1)
	var mu sync.Mutex // the loop may stop before the input ends (see Run)
	var failure error
	go func() {
		defer close(c)
		dec := json.NewDecoder(in)
		for {
			var line struct {
				wire.Request
				Relay *wire.Frame `json:"relay"`
			}
			err := dec.Decode(&line)
			switch {
			case errors.Is(err, io.EOF):
				err = nil
			case err != nil:
			case line.Relay == nil:
				c <- line.Request
				continue
			case relay == nil:
				err = errors.New("a relay frame, and no relay")
			default:
				err = relay.Receive(*line.Relay)
				if err == nil {
					continue
				}
			}
			mu.Lock()
			failure = err
			mu.Unlock()
			if relay != nil {
				relay.Shut(cmp.Or(err, io.EOF))
			}
			return
		}
	}()
	return c, func() error {
		mu.Lock()
		defer mu.Unlock()
		return failure
	}
}

// watchInput returns a channel closed when the writer of in (aa-grade) closes it or dies, so
// that a running command is stopped at once rather than when it ends. It waits in poll(2) for
// a hang-up only, asking for no event: it never takes the requests the main loop reads.
func watchInput(in io.Reader) <-chan struct{} {
	ended := make(chan struct{})
	f, ok := in.(*os.File)
	if !ok {
		return ended // never closed: the end is seen between requests
	}
	fd := int(f.Fd())
	go func() {
		defer close(ended)
		for {
			fds := []unix.PollFd{{Fd: int32(fd)}}
			if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
		}
	}()
	return ended
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
