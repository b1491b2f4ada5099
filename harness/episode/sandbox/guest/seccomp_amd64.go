//go:build linux

package guest

import "golang.org/x/sys/unix"

// legacyMetadataSyscalls are amd64's calls that change a file's mode, owner or times by path,
// which arm64 has only in their *at forms.
var legacyMetadataSyscalls = []uintptr{unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES,
	unix.SYS_FUTIMESAT}
