package judge

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

func writeAnswer(t *testing.T, dir, key, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadCachesJoins: answers of several folders are joined, the same answer twice kept once,
// a file that is not an answer skipped with a warning naming it, a missing folder ignored.
func TestReadCachesJoins(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeAnswer(t, a, "k1", `{"model":"openai/gpt-5.5","reply":"{\"x\": \"g1\"}"}`)
	writeAnswer(t, a, "k2", `{"model":"openai/gpt-5.5","reply":"{\"y\": null}"}`)
	writeAnswer(t, b, "k2", `{"reply":"{\"y\": null}","model":"openai/gpt-5.5"}`) // same answer, other bytes
	writeAnswer(t, b, "k3", `{"model":"openai/gpt-5.5","reply":"{}"}`)
	writeAnswer(t, b, "k4", `{"model":`)
	c, err := ReadCaches(a, b, filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 3 {
		t.Errorf("%d answers, want 3", c.Len())
	}
	if len(c.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", c.Warnings)
	}
	if !textcheck.Has(t, "the warning", c.Warnings[0], filepath.Join(b, "k4.json")) || t.Failed() {
		t.FailNow()
	}
	out := filepath.Join(t.TempDir(), "judge")
	if err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	j := &Judge{CacheDir: out}
	for key, want := range map[string]string{"k1": `{"x": "g1"}`, "k2": `{"y": null}`, "k3": `{}`} {
		if got, ok := j.cached(key); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", key, got, ok, want)
		}
	}
}

// TestReadCachesRefusesConflicts: one question answered two ways is refused, naming both files.
func TestReadCachesRefusesConflicts(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeAnswer(t, a, "k1", `{"model":"m","reply":"{\"x\": \"g1\"}"}`)
	writeAnswer(t, b, "k1", `{"model":"m","reply":"{\"x\": null}"}`)
	_, err := ReadCaches(a, b)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	textcheck.Has(t, "the conflict", err.Error(), filepath.Join(a, "k1.json"), filepath.Join(b, "k1.json"))

}
