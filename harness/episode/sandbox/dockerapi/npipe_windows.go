//go:build windows

package dockerapi

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// dialPipe opens a Windows named pipe (Docker Desktop's \\.\pipe\docker_engine) as a
// connection for the HTTP transport. The handle is opened for overlapped I/O, which os.NewFile
// puts on the runtime's I/O completion port: reads and writes hold no thread, and closing the
// connection (a cancelled request) ends them. No Windows machine runs the tests: this is
// built and vetted (make cross), not exercised.
func dialPipe(ctx context.Context, path string) (net.Conn, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	for {
		h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING,
			windows.FILE_FLAG_OVERLAPPED, 0)
		if err == nil {
			return pipeConn{os.NewFile(uintptr(h), path)}, nil
		}
		if !errors.Is(err, windows.ERROR_PIPE_BUSY) {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		select { // every instance of the pipe is serving a client: try again shortly
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pipeConn is a named pipe as a net.Conn: os.File has the reads, writes and deadlines. It has
// no CloseWrite, so the end of the guest's input closes the whole connection.
type pipeConn struct{ *os.File }

func (c pipeConn) LocalAddr() net.Addr  { return pipeAddr(c.Name()) }
func (c pipeConn) RemoteAddr() net.Addr { return pipeAddr(c.Name()) }

type pipeAddr string

func (a pipeAddr) Network() string { return "npipe" }
func (a pipeAddr) String() string  { return string(a) }
