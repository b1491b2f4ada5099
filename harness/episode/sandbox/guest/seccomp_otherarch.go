//go:build linux && !amd64 && !arm64

package guest

// legacyMetadataSyscalls: the filter is written for amd64 and arm64 only (kernel.SeccompArch).
var legacyMetadataSyscalls []uintptr
