package sandbox

// defaultDockerHost is where Docker Desktop for Windows listens.
const defaultDockerHost = "npipe:////./pipe/docker_engine"
