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
	"time"

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
	if body == nil {
		return c.Send(ctx, method, endpoint, "", nil, out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.Send(ctx, method, endpoint, "application/json", bytes.NewReader(b), out)
}

// PutArchive extracts the tar stream into the folder dir of the container id (PUT
// /containers/{id}/archive), which must lie in a writable volume of it when its root file
// system is read-only. The daemon keeps the owners and modes the stream gives: this is how
// files reach a daemon that does not share the host's (in a VM, or on another machine).
func (c *Client) PutArchive(ctx context.Context, id, dir string, tar io.Reader) error {
	endpoint := "/containers/" + id + "/archive?" + url.Values{"path": {dir}}.Encode()
	_, err := c.Send(ctx, http.MethodPut, endpoint, "application/x-tar", tar, nil)
	return err
}

// Send is Do with a body of any type (contentType "": none).
//
// bodyclose:handled
func (c *Client) Send(
	ctx context.Context, method, endpoint, contentType string, body io.Reader, out any,
) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+apiVersion+endpoint, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
	if err := upgrade(conn, br, "/containers/"+id+"/attach?stream=1&stdin=1&stdout=1&stderr=1", nil); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}

// upgrade sends a POST to endpoint on conn (body: JSON, nil: none) that the daemon answers
// with the raw stream of a process (attach, exec), and reads its answer from br.
func upgrade(conn net.Conn, br *bufio.Reader, endpoint string, body []byte) error {
	req := "POST " + apiVersion + endpoint + " HTTP/1.1\r\n" +
		"Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
	if body != nil {
		req += "Content-Type: application/json\r\n"
	}
	req += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	resp, err := readAttachAnswer(br)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10)) // the daemon's message, if it gives one
		return newError(resp.StatusCode, b)
	}
	return nil
}

// Exec runs cmd in the running container id as user (exec), with env added to the
// container's environment, and waits for it to end: it returns its exit code and the end of
// what it wrote (its last 16 KiB of stdout and stderr together).
func (c *Client) Exec(ctx context.Context, id, user string, env, cmd []string) (int, string, error) {
	config := map[string]any{"User": user, "Env": env, "Cmd": cmd, "AttachStdout": true, "AttachStderr": true}
	var created struct{ ID string }
	if _, err := c.Do(ctx, http.MethodPost, "/containers/"+id+"/exec", config, &created); err != nil {
		return 0, "", err
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return 0, "", err
	}
	// The exec's stream is read to its end, or abandoned with an error already.
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // ends the reads below
	defer stop()
	br := bufio.NewReader(conn)
	if err := upgrade(conn, br, "/exec/"+created.ID+"/start", []byte(`{"Detach":false,"Tty":false}`)); err != nil {
		return 0, "", cmp.Or(ctx.Err(), err)
	}
	out := &tail{limit: 16 << 10}
	if err := Demux(br, out, out); !errors.Is(err, io.EOF) {
		return 0, "", cmp.Or(ctx.Err(), err)
	}
	// The stream ends when the process does; the daemon may record its code a moment later.
	for {
		var state struct {
			Running  bool
			ExitCode int
		}
		if _, err := c.Do(ctx, http.MethodGet, "/exec/"+created.ID+"/json", nil, &state); err != nil {
			return 0, "", err
		}
		if !state.Running {
			return state.ExitCode, string(out.b), nil
		}
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tail keeps the last limit bytes written to it.
type tail struct {
	b     []byte
	limit int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.limit; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
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
// header (stream, 3 zero bytes, big-endian length) and their payload, until the stream ends
// (io.EOF).
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
