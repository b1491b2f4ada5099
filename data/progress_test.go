package data

import (
	"sync"
	"testing"
)

// TestPullTellsItsProgress: a pull tells what it covers, every byte it downloads (the result's
// count: two files of the same content share a blob, fetched once) and every file it ends; a
// second pull tells the files already in the cache and downloads nothing.
func TestPullTellsItsProgress(t *testing.T) {
	_, files, cfg := newHub(t)
	var total int64
	for _, f := range files {
		total += int64(len(f.Content))
	}
	for _, c := range []struct {
		name        string
		cachedFiles int64
		filesDone   int
	}{{"first pull", 0, len(files)}, {"second pull", int64(len(files)), 0}} {
		var mu sync.Mutex
		var planned []PullPlanned
		var downloaded int64
		done := map[string]bool{}
		res, err := pull(t, cfg, PullOptions{Progress: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e := e.(type) {
			case PullPlanned:
				planned = append(planned, e)
			case PullBytes:
				downloaded += e.N
			case PullFileDone:
				if e.Err != nil {
					t.Errorf("%s: %s failed: %v", c.name, e.Path, e.Err)
				}
				done[e.Path] = true
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(planned) != 1 {
			t.Fatalf("%s: planned %d times, want once", c.name, len(planned))
		}
		if p := planned[0]; p.Files != len(files) || p.Bytes != total {
			t.Errorf("%s: planned %d files of %d bytes, want %d of %d", c.name, p.Files, p.Bytes, len(files), total)
		}
		if p := planned[0]; int64(p.CachedFiles) != c.cachedFiles {
			t.Errorf("%s: %d files cached, want %d", c.name, p.CachedFiles, c.cachedFiles)
		}
		if downloaded != res.Downloaded {
			t.Errorf("%s: told %d bytes downloaded, the result says %d", c.name, downloaded, res.Downloaded)
		}
		if len(done) != c.filesDone {
			t.Errorf("%s: told %d files done, want %d", c.name, len(done), c.filesDone)
		}
	}
}
