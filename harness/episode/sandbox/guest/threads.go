package guest

import (
	"runtime"
	"sync"
)

// reservedThreads is how many idle OS threads the guest starts before it runs a command: more
// than it ever blocks in system calls at once (a command's wait, the input, the relay's
// connections take their turns on them), a few of the 512 tasks its pids cgroup allows.
const reservedThreads = 16

// reserveThreads starts reservedThreads OS threads and leaves them idle, where the Go runtime
// keeps them for later. A command's fork bomb fills the pids cgroup the guest shares with it,
// and counts threads too: a guest that then needed a new thread (a goroutine blocked in a
// system call) would die making one, ending the episode in error instead of the command.
// The threads are started before any command, so they hold the guest's ids and seccomp
// filter like its others; commands are started from the confined thread, never from these.
func reserveThreads() {
	var started, release sync.WaitGroup
	started.Add(reservedThreads)
	release.Add(1)
	for range reservedThreads {
		go func() {
			runtime.LockOSThread() // each goroutine holds a thread of its own until all run
			started.Done()
			release.Wait()
			runtime.UnlockOSThread() // unlocked before it ends, so the runtime keeps the thread
		}()
	}
	started.Wait()
	release.Done()
}
