//go:build darwin

package sandbox

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// processStart is the start time of a process ("m", then microseconds since 1970: see
// startTime), so that a process that got the pid of a dead one does not pass for it.
func processStart(pid int) (string, error) {
	p, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return "", err
	}
	if p.Proc.P_pid != int32(pid) { // the kernel answers an empty record for a pid not in use
		return "", errors.New("no such process")
	}
	t := p.Proc.P_starttime
	return "m" + strconv.FormatInt(int64(t.Sec)*1_000_000+int64(t.Usec), 10), nil
}
