//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// processStart is the start time of a process (field 22 of /proc/PID/stat, in clock ticks
// since boot).
func processStart(pid int) (string, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	return fields[19], nil
}

// cgroupParents are where aa-grade's cgroups are made (none when it cannot make any).
func cgroupParents() []string { return cgroups().parents }
