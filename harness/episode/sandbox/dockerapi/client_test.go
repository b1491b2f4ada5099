package dockerapi

import (
	"bytes"
	"testing"
)

// TestHosts: DOCKER_HOST's forms become the network and address dialled; others are refused.
func TestHosts(t *testing.T) {
	for host, want := range map[string][2]string{
		"npipe:////./pipe/docker_engine":    {"npipe", `\\.\pipe\docker_engine`},
		"unix:///run/user/1000/docker.sock": {"unix", "/run/user/1000/docker.sock"},
		"tcp://127.0.0.1:2375":              {"tcp", "127.0.0.1:2375"},
	} {
		t.Setenv("DOCKER_HOST", host)
		c, err := New()
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		if got := [2]string{c.network, c.address}; got != want {
			t.Errorf("%s: network and address %q, want %q", host, got, want)
		}
		if c.Host != host {
			t.Errorf("%s: Host %q", host, c.Host)
		}
	}
	t.Setenv("DOCKER_HOST", "ssh://me@host")
	if _, err := New(); err == nil {
		t.Error("ssh:// was taken")
	}
}

// TestDemux: frames go to stdout or stderr by their header; stdin's are dropped.
func TestDemux(t *testing.T) {
	frame := func(stream byte, payload string) []byte {
		n := len(payload)
		return append([]byte{stream, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, payload...)
	}
	in := bytes.NewReader(bytes.Join([][]byte{frame(1, "out1 "), frame(2, "err"), frame(0, "in"), frame(1, "out2")}, nil))
	var stdout, stderr bytes.Buffer
	if err := Demux(in, &stdout, &stderr); err == nil {
		t.Errorf("no error for a frame of stream 0")
	}
	if got := stdout.String(); got != "out1 out2" {
		t.Errorf("stdout %q, want %q", got, "out1 out2")
	}
	if got := stderr.String(); got != "err" {
		t.Errorf("stderr %q, want %q", got, "err")
	}
}
