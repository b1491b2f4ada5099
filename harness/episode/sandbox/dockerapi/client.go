// Package dockerapi is the few calls of Docker's Engine API the docker sandbox makes, over
// DOCKER_HOST with net/http (no Docker SDK): calls with JSON bodies, attaching to a
// container's stdin, stdout and stderr, demultiplexing that stream, and pulls.
package dockerapi

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
)

// apiVersion is the Engine API version aa-grade speaks: Docker 20.10 and later, and Podman's
// Docker-compatible API, serve it.
const apiVersion = "/v1.41"

// Client speaks the Engine API over DOCKER_HOST with net/http.
type Client struct {
	Host    string // DOCKER_HOST as given, for messages
	network string // unix or tcp
	address string
	http    *http.Client
}

// New is a client of the daemon DOCKER_HOST names (else the platform's default socket).
func New() (*Client, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = defaultHost
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST %q: %w", host, err)
	}
	c := &Client{Host: host}
	switch u.Scheme {
	case "unix":
		c.network, c.address = "unix", u.Path
	case "tcp", "http":
		c.network, c.address = "tcp", u.Host
	case "npipe": // npipe:////./pipe/docker_engine is \\.\pipe\docker_engine
		c.network, c.address = "npipe", strings.ReplaceAll(u.Host+u.Path, "/", `\`)
	default:
		return nil, fmt.Errorf("DOCKER_HOST %q: aa-grade speaks to unix://, npipe:// and tcp:// (without TLS) daemons", host)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) }
	c.http = &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 16}}
	return c, nil
}

// dial opens a connection to the daemon.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.network == "npipe" {
		return dialPipe(ctx, c.address)
	}
	return (&net.Dialer{}).DialContext(ctx, c.network, c.address)
}

// Error is an answer of the daemon other than a success, with its message.
type Error struct {
	Code    int
	Message string
}

// newError reads the daemon's answer to a failed call: {"message": ...}, or its text.
func newError(code int, body []byte) *Error {
	var msg struct{ Message string }
	_ = json.Unmarshal(body, &msg) // a body that is not JSON is taken as text
	return &Error{Code: code, Message: cmp.Or(msg.Message, strings.TrimSpace(string(body)), http.StatusText(code))}
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Do sends one API call with a JSON body (nil: none) and decodes a JSON answer into out (nil:
// ignored). It reads and closes the answer's body itself: the response it returns is for its
// status and header (the directive below tells bodyclose so).
//
// bodyclose:handled
func (c *Client) Do(ctx context.Context, method, endpoint string, body, out any) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+apiVersion+endpoint, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, newError(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, endpoint, err)
		}
	}
	return resp, nil
}

// Attach opens the container's stdin, stdout and stderr as one raw connection (the API's
// upgraded HTTP connection), before the container starts so that nothing is missed.
func (c *Client) Attach(ctx context.Context, id string) (*Conn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	if err := attach(conn, br, id); err != nil {
		_ = conn.Close() // the attach's error is the one to tell
		return nil, err
	}
	return &Conn{Conn: conn, r: br}, nil
}

// attach asks the daemon on conn to attach to the container id, and reads its answer from br.
func attach(conn net.Conn, br *bufio.Reader, id string) error {
	req := "POST " + apiVersion + "/containers/" + id + "/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n" +
		"Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	resp, err := readAttachAnswer(br)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("attach: %s", resp.Status)
	}
	return nil
}

// readAttachAnswer reads the daemon's answer to an attach. Its body, where it has one, is the
// container's stream, which Conn reads from br: closing it would read the stream away, so
// none of its callers does (the directive below tells bodyclose so).
//
// bodyclose:handled
func readAttachAnswer(br *bufio.Reader) (*http.Response, error) { return http.ReadResponse(br, nil) }

// Conn is an attached connection: it reads first what the response's reader already took
// from it.
type Conn struct {
	net.Conn
	r *bufio.Reader
}

func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// HalfClose closes only the sending half of the connection, so the container's process sees
// the end of its input while its last words still come back.
func (c *Conn) HalfClose() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// Pull has the daemon pull an image (POST /images/create), with the credentials of Docker's
// config.json for its registry when there are some: the daemon does not read that file. The
// daemon streams its progress; a failure after the start is the stream's last "error".
func (c *Client) Pull(ctx context.Context, ref registry.Reference) error {
	q := url.Values{"fromImage": {ref.Registry + "/" + ref.Repository}, "tag": {cmp.Or(ref.Digest, ref.Tag)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://docker"+apiVersion+"/images/create?"+q.Encode(),
		nil)
	if err != nil {
		return err
	}
	if creds, ok := registry.DockerConfigCredentials(ref.Registry); ok {
		auth, _ := json.Marshal(
			map[string]string{"username": creds.Username, "password": creds.Password, "serveraddress": ref.Registry})
		req.Header.Set("X-Registry-Auth", base64.URLEncoding.EncodeToString(auth))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return newError(resp.StatusCode, data)
	}
	dec := json.NewDecoder(resp.Body)
	var failure error
	for {
		var msg struct{ Error string }
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return failure
		} else if err != nil {
			return fmt.Errorf("the daemon's answer: %w", err)
		}
		if msg.Error != "" {
			failure = errors.New(msg.Error)
		}
	}
}

// Demux splits the attached stream of a container without a terminal: frames of an 8-byte
// header (stream, 3 zero bytes, big-endian length) and their payload.
func Demux(r io.Reader, stdout io.Writer, stderr io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var header [8]byte
	for {
		if _, err := io.ReadFull(br, header[:]); err != nil {
			return err
		}
		size := int64(binary.BigEndian.Uint32(header[4:]))
		dst := io.Discard
		switch header[0] {
		case 1:
			dst = stdout
		case 2:
			dst = stderr
		}
		if _, err := io.CopyN(dst, br, size); err != nil {
			return err
		}
	}
}
