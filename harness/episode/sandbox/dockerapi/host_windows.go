package dockerapi

// defaultHost is where Docker Desktop for Windows listens.
const defaultHost = "npipe:////./pipe/docker_engine"
