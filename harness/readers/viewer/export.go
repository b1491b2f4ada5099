package viewer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Export writes the pages as static files under dir, the same pages the server shows, as they
// stand: index.html, a page per episode at runs/N/TASK/R.html and each raw trajectory beside
// its page. They open from the disk, with no server, and load nothing.
func (v *Viewer) Export(ctx context.Context, dir string) error {
	runs, _, _, err := v.loadAll()
	if err != nil {
		return err
	}
	index := v.buildIndex(runs)
	if err := writeFile(dir, "index.html", func(w io.Writer) error { return render(w, "runs", index) }); err != nil {
		return err
	}
	if err := v.exportATIF(ctx, dir, index.Trajectories); err != nil {
		return err
	}
	for _, l := range runs {
		for i, e := range l.eps {
			if err := ctx.Err(); err != nil {
				return err
			}
			page := v.buildEpisodePage(ctx, l, i)
			if err := writeFile(dir, e.Path, func(w io.Writer) error { return render(w, "episode", page) }); err != nil {
				return err
			}
			if page.Trajectory == "" {
				continue
			}
			err := writeFile(dir, path.Join(path.Dir(e.Path), page.Trajectory), func(w io.Writer) error {
				f, err := safefile.Open(l.root, path.Join(e.dir(), page.TrajectoryFile))
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }() // read only
				_, err = io.Copy(w, f)
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// exportATIF writes the page of each ATIF document the first page lists, and the document
// beside it.
func (v *Viewer) exportATIF(ctx context.Context, dir string, cards []trajectoryCard) error {
	for ci, c := range cards {
		s := v.trajectories[ci]
		for i, e := range c.found.Episodes {
			if err := ctx.Err(); err != nil {
				return err
			}
			page := s.buildATIFPage(c.found, i)
			name := atifPath(s.n, i)
			if err := writeFile(dir, name, func(w io.Writer) error { return render(w, "atif", page) }); err != nil {
				return err
			}
			if page.Raw == "" {
				continue
			}
			b, err := safefile.ReadPath(e.Path, atif.MaxBytes)
			if err != nil {
				return err
			}
			if err := writeFile(dir, path.Join(path.Dir(name), page.Raw), func(w io.Writer) error {
				_, err := w.Write(b)
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFile writes one file of the export; name is a path the pages built, never a task id
// that is not a safe file name.
func writeFile(dir, name string, write func(io.Writer) error) error {
	full := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("write the pages: %w", err)
	}
	f, err := os.Create(full)
	if err != nil {
		return fmt.Errorf("write the pages: %w", err)
	}
	err = write(f)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	return nil
}
