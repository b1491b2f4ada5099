package demogen

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/data"
)

// TestEmbeddedDemoMatchesGenerator keeps data/demo/demo.tar.zst in step with the generator:
// after a change to synth, run `go generate ./data`.
func TestEmbeddedDemoMatchesGenerator(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := Build(fresh); err != nil {
		t.Fatal(err)
	}
	embedded := filepath.Join(t.TempDir(), "embedded")
	if err := data.UnpackTarZst(bytes.NewReader(data.DemoArchive()), embedded); err != nil {
		t.Fatal(err)
	}
	want, got := readTree(t, fresh), readTree(t, embedded)
	for path, content := range want {
		if !bytes.Equal(got[path], content) {
			t.Errorf("%s differs from the generator's (run go generate ./data)", path)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("%s is embedded but no longer generated (run go generate ./data)", path)
		}
	}
	if len(want) < len(Tasks)*60 {
		t.Fatalf("only %d files generated", len(want))
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
