//go:build !windows

package dockerapi

import (
	"context"
	"errors"
	"net"
)

// dialPipe: named pipes are Windows'.
func dialPipe(context.Context, string) (net.Conn, error) {
	return nil, errors.New("npipe:// is a Windows named pipe; here DOCKER_HOST is unix:// or tcp://")
}
