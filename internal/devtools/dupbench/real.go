package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/internal/testsupport/taskedit"
	"github.com/aa-grade/aa-grade/snapshot"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// measureReal copies the real task (or fragment) src every way, and compares it with its
// copies and with the generated tasks: a real task's names and noise, not the generator's.
func measureReal(out, src string, background []*validate.Fingerprint, tasks []*task) error {
	dir := filepath.Join(out, "real", filepath.Base(src))
	if err := asTask(src, dir); err != nil {
		return err
	}
	fp, err := validate.FingerprintTask(filepath.Base(src), dir)
	if err != nil {
		return err
	}
	services, err := serviceNames(dir)
	if err != nil {
		return err
	}
	var against []*validate.Fingerprint
	for _, t := range tasks {
		against = append(against, t.fp)
	}
	rarest, err := taskedit.RarestCall(dir)
	if err != nil { // a fragment: its "rarest call lost" copy is another unchanged copy
		fmt.Fprintln(os.Stderr, "dupbench:", err)
	}
	for _, k := range edits(services, taskedit.AppNamespace, rarest, 1) {
		copyDir := filepath.Join(out, "real", strings.ReplaceAll(k.name, " ", "-"), filepath.Base(src))
		if err := taskedit.Copy(dir, copyDir, k.edits...); err != nil {
			return err
		}
		c, err := validate.FingerprintTask(fp.Task+" "+k.name, copyDir)
		if err != nil {
			return err
		}
		against = append(against, c)
	}
	fmt.Printf("\n%s (%d features; services renamed: %s) against its copies and the generated tasks:\n\n",
		fp.Task, len(fp.Features), strings.Join(services, ", "))
	for _, p := range validate.Similarities([]*validate.Fingerprint{fp}, against, background)[:len(against)-len(tasks)+1] {
		fmt.Printf("- %s: %.2f\n", p.Of, p.Similarity)
	}
	return nil
}

// asTask copies the files of a snapshot fragment src into the task folder dst, under the names
// of the whole files they are the heads of ("k8s_events_raw.tsv.HEAD-FRAGMENT"), leaving out
// what is not a snapshot's (a listing).
func asTask(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = strings.TrimSuffix(rel, ".HEAD-FRAGMENT")
		if snapshot.TableOf(rel) == "" && !strings.HasPrefix(filepath.Base(rel), "alerts_") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// serviceNames are the services a task's alerts and spans name: a fragment has no object
// dump to list its workloads.
func serviceNames(dir string) ([]string, error) {
	seen := map[string]bool{}
	files, err := snapshot.Inventory(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Path)
		switch {
		case f.Alert:
			af, err := snapshot.ReadAlertsFile(path)
			if err != nil {
				return nil, err
			}
			for _, a := range af.Alerts {
				seen[a.Labels["service_name"]] = true
			}
		case f.Table == snapshot.Traces:
			if _, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
				seen[r.Get("ServiceName")] = true
				return nil
			}); err != nil {
				return nil, err
			}
		}
	}
	delete(seen, "")
	return slices.Sorted(maps.Keys(seen)), nil
}
