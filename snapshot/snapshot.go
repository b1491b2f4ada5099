// Package snapshot reads one pre-recorded incident snapshot: its file inventory, the alerts
// JSON files, the pandas TSV tables with their Python-literal attribute columns, and the
// catalogue of Kubernetes objects it shows.
package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/internal/workpool"
)

// File is one file of a snapshot folder.
type File struct {
	Path  string // relative to the snapshot folder, with forward slashes
	Size  int64
	Table Table // "" for files that are not tables
	Alert bool  // an alerts JSON file
}

// Problem is a file, or a line of one, that could not be read.
type Problem struct {
	File string // relative path
	Line int    // 0 for the whole file
	Err  error
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s line %d: %v", p.File, p.Line, p.Err)
	}
	return fmt.Sprintf("%s: %v", p.File, p.Err)
}

// Snapshot is what one pass over a snapshot folder found.
type Snapshot struct {
	Dir      string
	Files    []File
	Alerts   []*AlertsFile
	Tables   map[string]*TableStats // by relative path
	Catalog  *Catalog
	Problems []Problem // files that could not be read at all (broken records are in Tables)
}

// IsAlertsFile tells an alerts file by its name: alerts_*.json (in alerts/ or, in one task,
// at the top of the folder).
func IsAlertsFile(rel string) bool {
	base := filepath.Base(rel)
	return strings.HasPrefix(base, "alerts") && strings.HasSuffix(base, ".json")
}

// Inventory lists the files of a snapshot folder (following the cache's symlinks).
func Inventory(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		files = append(files, File{Path: rel, Size: info.Size(), Table: TableOf(rel), Alert: IsAlertsFile(rel)})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

// Read makes one pass over a snapshot folder: every alerts file and every table is read (in
// parallel), broken records are counted, and the catalogue is built from the object dumps,
// the events and the alerts. A file that cannot be read is a Problem, not an error; the error
// is for a folder that cannot be listed.
func Read(dir string) (*Snapshot, error) {
	files, err := Inventory(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	s := &Snapshot{Dir: dir, Files: files, Tables: map[string]*TableStats{}, Catalog: NewCatalog()}
	var mu sync.Mutex
	var order []File
	for _, f := range files {
		if f.Alert || f.Table != "" {
			order = append(order, f)
		}
	}
	// Largest first, so one big table does not start last.
	sort.SliceStable(order, func(i, j int) bool { return order[i].Size > order[j].Size })
	workpool.Run(context.Background(), runtime.GOMAXPROCS(0), order, func(f File) { s.readFile(f, &mu) })
	sort.Slice(s.Alerts, func(i, j int) bool { return s.Alerts[i].Path < s.Alerts[j].Path })
	sort.Slice(s.Problems, func(i, j int) bool {
		if s.Problems[i].File != s.Problems[j].File {
			return s.Problems[i].File < s.Problems[j].File
		}
		return s.Problems[i].Line < s.Problems[j].Line
	})
	return s, nil
}

func (s *Snapshot) readFile(f File, mu *sync.Mutex) {
	path := filepath.Join(s.Dir, filepath.FromSlash(f.Path))
	problem := func(line int, err error) {
		mu.Lock()
		s.Problems = append(s.Problems, Problem{File: f.Path, Line: line, Err: err})
		mu.Unlock()
	}
	if f.Alert {
		af, err := ReadAlertsFile(path)
		if err != nil {
			problem(0, err)
			return
		}
		af.Path = f.Path
		for _, a := range af.Alerts {
			s.Catalog.addAlert(a, af.Time)
		}
		mu.Lock()
		s.Alerts = append(s.Alerts, af)
		mu.Unlock()
		return
	}
	var badBodies []*RecordError
	stats, err := ScanTable(path, func(r Row) error {
		var err error
		switch f.Table {
		case Objects:
			var o KubeObject
			if o, err = r.Object(); err == nil {
				s.Catalog.Add(o.Ref, o.Time, "objects")
			}
		case Events:
			var e KubeEvent
			if e, err = r.Event(); err == nil {
				s.Catalog.Add(e.Regarding, e.Time, "events")
			}
		}
		if err != nil {
			badBodies = append(badBodies, &RecordError{File: f.Path, Line: r.Line, Err: err})
		}
		return nil
	})
	if err != nil {
		problem(0, err)
	}
	if stats != nil {
		stats.Rows -= len(badBodies)
		for _, b := range badBodies {
			stats.bad(b)
		}
		mu.Lock()
		s.Tables[f.Path] = stats
		mu.Unlock()
	}
}
