//go:build linux

package sandbox

// legacyMetadataSyscalls: arm64 has the metadata calls only in their *at forms.
var legacyMetadataSyscalls []uintptr
