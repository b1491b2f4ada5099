//go:build !windows

package sandbox

// defaultDockerHost is where Docker listens (Docker Desktop, Colima and OrbStack link it).
const defaultDockerHost = "unix:///var/run/docker.sock"
