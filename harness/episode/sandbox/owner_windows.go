//go:build windows

package sandbox

import (
	"errors"
	"strconv"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess gives a process that has not ended.
const stillActive = 259

// processStart is the creation time of a running process ("w", then 100 ns since 1601: see
// startTime), so that a process that got the pid of a dead one does not pass for it: Windows
// reuses pids, and Wine gives a new process the pid its last one had.
func processStart(pid int) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return "", err
	}
	if code != stillActive { // ended, its handle still held open by another process
		return "", errors.New("the process has ended")
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return "", err
	}
	return "w" + strconv.FormatUint(uint64(created.HighDateTime)<<32|uint64(created.LowDateTime), 10), nil
}
