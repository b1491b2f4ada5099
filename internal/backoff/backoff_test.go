package backoff

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	if got := RetryAfter("7"); got != 7*time.Second {
		t.Errorf("seconds: %v", got)
	}
	if got := RetryAfter(time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)); got < 28*time.Second || got > 31*time.Second {
		t.Errorf("date: %v", got)
	}
	if got := RetryAfter("soon"); got != 0 {
		t.Errorf("junk: %v", got)
	}
}

func TestDelay(t *testing.T) {
	p := Policy{Base: time.Second, Max: 8 * time.Second, MaxRetryAfter: time.Minute}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second} {
		for range 20 {
			if d := p.Delay(attempt, 0); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := p.Delay(1, 30*time.Second); d != 30*time.Second {
		t.Errorf("Retry-After: %v", d)
	}
	if d := p.Delay(1, time.Hour); d != time.Minute {
		t.Errorf("Retry-After capped: %v", d)
	}
}

// TestUnreachable: only failures where no server answers count; a connection reset or a body
// cut short came from a server that is there.
func TestUnreachable(t *testing.T) {
	for err, want := range map[error]bool{
		&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}: true,
		&net.DNSError{Err: "no such host", Name: "hub.invalid", IsNotFound: true}:          true,
		syscall.ECONNRESET:  false,
		io.ErrUnexpectedEOF: false,
	} {
		if got := Unreachable(fmt.Errorf("get: %w", err)); got != want {
			t.Errorf("Unreachable(%v) = %v", err, got)
		}
	}
}
