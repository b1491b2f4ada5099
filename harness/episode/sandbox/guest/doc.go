// Package guest is the side of a sandbox that runs inside it: the aa-grade process (the
// hidden command sandbox.GuestCommand) that a backend starts in the sandbox as its first
// process, which confines itself as aa-grade asked (namespaces' mounts, Landlock, the seccomp
// filter, no capabilities, limits) and then serves aa-grade's requests over its stdin and
// stdout: each command a fork and exec of `bash -c` in its own process group, its output
// captured within bounds; the submission read inside the workspace; the relay's connections
// carried both ways.
//
// It is one of three packages that are read apart: package sandbox is the host side (the
// backends that start a guest, and the session that talks to it), this one the guest side,
// and package wire what crosses between them. The guest imports wire and kernel, never the
// host side, so that what runs among the model's commands holds no more than it needs.
package guest
