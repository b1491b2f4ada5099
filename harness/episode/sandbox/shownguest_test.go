package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestShownGuestBlanksWhatIsConcealed: a concealed string is zeroed in the copy a sandbox
// runs, which nobody may read and which is made once; a string found twice, or not at all,
// starts no sandbox (nothing could say the copy holds it no more).
func TestShownGuestBlanksWhatIsConcealed(t *testing.T) {
	secret := []byte("the-answer-key-of-the-demo")
	t.Cleanup(func() { concealed = nil })
	concealed = [][]byte{secret}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	exe := filepath.Join(t.TempDir(), "aa-grade")
	if err := os.WriteFile(exe, []byte("ELF...before|the-answer-key-of-the-demo|after"), 0o755); err != nil {
		t.Fatal(err)
	}
	shown, err := shownGuest(exe)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(shown)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o111 {
		t.Errorf("the copy has mode %v, want 0111 (executable, readable by nobody)", perm)
	}
	os.Chmod(shown, 0o400)
	b, err := os.ReadFile(shown)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ELF...before|" + string(make([]byte, len(secret))) + "|after"; string(b) != want {
		t.Errorf("the copy holds %q, want %q", b, want)
	}
	os.Chmod(shown, 0o111)
	if again, err := shownGuest(exe); err != nil || again != shown {
		t.Errorf("a second sandbox runs %s (%v), want the first copy %s", again, err, shown)
	}
	for name, content := range map[string]string{"twice": "a|the-answer-key-of-the-demo|b|the-answer-key-of-the-demo", "absent": "a build without it"} {
		other := filepath.Join(t.TempDir(), name)
		os.WriteFile(other, []byte(content), 0o755)
		if _, err := shownGuest(other); !errors.Is(err, ErrConcealed) {
			t.Errorf("%s: %v, want ErrConcealed", name, err)
		}
	}
	if bytes.Contains(b, secret) {
		t.Error("the copy holds the secret")
	}
}

// TestShownGuestIsTheGuestWhenNothingIsConcealed: with nothing to conceal, the guest runs as
// it is, uncopied.
func TestShownGuestIsTheGuestWhenNothingIsConcealed(t *testing.T) {
	if shown, err := shownGuest("/usr/bin/true"); err != nil || shown != "/usr/bin/true" {
		t.Errorf("shown %s (%v), want /usr/bin/true", shown, err)
	}
}

// BenchmarkStageGuest: what a run pays, once, for the copy of its guest that a sandbox runs:
// this test binary read, 4 MB of it (the demo archive's size) found and zeroed, hashed, and
// found already made.
func BenchmarkStageGuest(b *testing.B) {
	exe, _ := os.Executable()
	content, err := os.ReadFile(exe)
	if err != nil {
		b.Fatal(err)
	}
	mid := len(content) / 2
	secret := bytes.Clone(content[mid : mid+4<<20])
	b.Cleanup(func() { concealed = nil })
	concealed = [][]byte{secret}
	dir := b.TempDir()
	for b.Loop() {
		if _, err := stageGuest(exe, dir); err != nil {
			b.Fatal(err)
		}
	}
}
