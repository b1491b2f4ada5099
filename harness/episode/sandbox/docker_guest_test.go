package sandbox

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestLinuxGuestNamedByEither: the Linux build for another architecture is the one
// AA_GRADE_LINUX_GUEST names, else the one its older name AA_GRADE_LINUX_AGENT names; the
// error of one that is not a program names the file and the new variable.
func TestLinuxGuestNamedByEither(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other == "" {
		t.Skipf("no release is built for %s", runtime.GOARCH)
	}
	self := filepath.Join(t.TempDir(), "aa-grade")
	guest, agent := filepath.Join(t.TempDir(), "named-guest"), filepath.Join(t.TempDir(), "named-agent")
	t.Setenv("AA_GRADE_LINUX_GUEST", guest)
	t.Setenv("AA_GRADE_LINUX_AGENT", agent)
	_, err := linuxGuest(self, other)
	if err == nil {
		t.Fatal("a missing Linux build was taken")
	}
	textcheck.Has(t, "the error", err.Error(), guest, "AA_GRADE_LINUX_GUEST")
	t.Setenv("AA_GRADE_LINUX_GUEST", "")
	_, err = linuxGuest(self, other)
	if err == nil {
		t.Fatal("a missing Linux build was taken")
	}
	textcheck.Has(t, "the error", err.Error(), agent)
}
