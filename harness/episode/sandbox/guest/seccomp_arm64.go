//go:build linux

package guest

// legacyMetadataSyscalls: arm64 has the metadata calls only in their *at forms.
var legacyMetadataSyscalls []uintptr
