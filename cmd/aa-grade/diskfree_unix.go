//go:build unix

package main

import "golang.org/x/sys/unix"

// diskFree is the space an unprivileged user may still write on the file system of path.
func diskFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
