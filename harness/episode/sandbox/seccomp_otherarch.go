//go:build linux && !amd64 && !arm64

package sandbox

// legacyMetadataSyscalls: the filter is written for amd64 and arm64 only (auditArch).
var legacyMetadataSyscalls []uintptr
