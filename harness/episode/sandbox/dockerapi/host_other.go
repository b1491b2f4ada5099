//go:build !windows

package dockerapi

// defaultHost is where Docker listens (Docker Desktop, Colima and OrbStack link it).
const defaultHost = "unix:///var/run/docker.sock"
