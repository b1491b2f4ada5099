// Command dupbench measures how well tasks validate --against tells an edited copy of a task
// from another task (issue 38): it generates tasks of many seeds (the faults each seed draws
// from the real benchmark's mix), copies each with every kind of edit an author might make,
// and compares each kind's copies with the originals as the command compares held-out tasks
// with a public dataset (over the demo's background). It prints, in Markdown, the
// similarities of the true copies, of re-recordings of the same fault, of the same fault on
// another service and of other faults, against validate.DuplicateThreshold; with -real, the
// same for a real fragment of a task.
//
//	go run ./internal/devtools/dupbench -out /tmp/dupbench -tasks 40 \
//	    -real ../shared/itbench/snapshot-fragments/Scenario-2
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/internal/testsupport/taskedit"
	"github.com/aa-grade/aa-grade/internal/workpool"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// shift is how far in time the moved copies are moved: hours, minutes and seconds, so that
// no clock field stays as it was.
const shift = 3*time.Hour + 7*time.Minute + 13*time.Second

// edits are the kinds of copy measured, by name, for a task whose application's workloads
// are services.
func edits(services []string, namespace string, rarest [2]string, seed uint64) []struct {
	name  string
	edits []taskedit.Edit
} {
	return []struct {
		name  string
		edits []taskedit.Edit
	}{
		{"renamed", []taskedit.Edit{taskedit.Renamed(services, namespace, seed)}},
		{"moved in time", []taskedit.Edit{taskedit.Retimed(shift)}},
		{"a fifth more lines", []taskedit.Edit{taskedit.Noised(0.2, true, seed)}},
		{"a fifth of lines left out", []taskedit.Edit{taskedit.Noised(0.2, false, seed)}},
		{"its rarest call lost", []taskedit.Edit{taskedit.Uncalled(rarest[0], rarest[1])}},
		{"renamed, moved, a fifth more lines", []taskedit.Edit{taskedit.Renamed(services, namespace, seed),
			taskedit.Retimed(shift), taskedit.Noised(0.2, true, seed)}},
		{"renamed, moved, lines left out", []taskedit.Edit{taskedit.Renamed(services, namespace, seed),
			taskedit.Retimed(shift), taskedit.Noised(0.2, false, seed)}},
	}
}

// task is a generated task and its copies, by kind of edit.
type task struct {
	res    *synth.Result
	fp     *validate.Fingerprint
	copies map[string]*validate.Fingerprint
}

func main() {
	out := flag.String("out", filepath.Join(os.TempDir(), "dupbench"), "the folder to write the tasks in")
	n := flag.Int("tasks", 40, "tasks to generate (the public dataset has 40)")
	first := flag.Uint64("seed", 100, "the first seed")
	real := flag.String("real", "", "a real task (or fragment of one) to copy and compare too")
	flag.Parse()
	if err := run(*out, *n, *first, *real); err != nil {
		fmt.Fprintln(os.Stderr, "dupbench:", err)
		os.Exit(1)
	}
}

func run(out string, n int, first uint64, real string) error {
	ctx := context.Background()
	demo, err := data.Open(ctx, "demo", data.OpenOptions{})
	if err != nil {
		return err
	}
	var background []*validate.Fingerprint
	for _, t := range demo.Tasks {
		fp, err := validate.FingerprintTask("demo:"+t.ID, t.Dir)
		if err != nil {
			return err
		}
		background = append(background, fp)
	}
	tasks := make([]*task, n)
	errs := make([]error, n)
	workpool.Run(ctx, runtime.GOMAXPROCS(0), seq(n), func(i int) {
		tasks[i], errs[i] = prepare(out, first+uint64(i))
	})
	if err := firstError(errs); err != nil {
		return err
	}
	kinds := edits(nil, taskedit.AppNamespace, [2]string{}, 0) // their names
	var rows []row
	var unrelated []validate.Pair
	for _, k := range kinds {
		var originals, copies []*validate.Fingerprint
		for _, t := range tasks {
			originals, copies = append(originals, t.fp), append(copies, t.copies[k.name])
		}
		r := row{name: "copies " + k.name}
		for _, p := range validate.Similarities(originals, copies, background) {
			switch a, b, copied := ids(p); {
			case a == b:
				r.add(p)
			case copied || len(rows) == 0: // the originals' pairs once
				unrelated = append(unrelated, p)
			}
		}
		rows = append(rows, r)
	}
	rows = append(rows, classify(tasks, unrelated)...)
	fmt.Printf("%d generated tasks (seeds %d-%d), each copied %d ways; threshold %.2f\n\n",
		n, first, first+uint64(n)-1, len(kinds), validate.DuplicateThreshold)
	printRows(rows)
	if real != "" {
		return measureReal(out, real, background, tasks)
	}
	return nil
}

// prepare generates the task of seed and its copies, and fingerprints them all.
func prepare(out string, seed uint64) (*task, error) {
	id := fmt.Sprintf("Scenario-%d", seed)
	res, err := synth.Generate(filepath.Join(out, "originals", id), synth.Options{Seed: seed})
	if err != nil {
		return nil, err
	}
	fp, err := validate.FingerprintTask(id, res.Dir)
	if err != nil {
		return nil, err
	}
	services, err := taskedit.Workloads(res.Dir, taskedit.AppNamespace)
	if err != nil {
		return nil, err
	}
	rarest, err := taskedit.RarestCall(res.Dir)
	if err != nil {
		return nil, err
	}
	t := &task{res: res, fp: fp, copies: map[string]*validate.Fingerprint{}}
	for _, k := range edits(services, taskedit.AppNamespace, rarest, seed) {
		dir := filepath.Join(out, strings.ReplaceAll(k.name, " ", "-"), id)
		if err := taskedit.Copy(res.Dir, dir, k.edits...); err != nil {
			return nil, err
		}
		if t.copies[k.name], err = validate.FingerprintTask(id+" "+k.name, dir); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ids are the tasks of a pair's two sides ("Scenario-101" for its copy "Scenario-101
// renamed" too), and whether the second is a copy.
func ids(p validate.Pair) (a, b string, copied bool) {
	a, _, _ = strings.Cut(p.Task, " ")
	b, _, copied = strings.Cut(p.Of, " ")
	return a, b, copied
}

// classify sorts the unrelated pairs into re-recordings of the same fault on the same
// service, the same fault on another service, and other faults.
func classify(tasks []*task, pairs []validate.Pair) []row {
	byID := map[string]*task{}
	for _, t := range tasks {
		byID[t.fp.Task] = t
	}
	rows := []row{{name: "same fault, same service, another recording"}, {name: "same fault, another service"},
		{name: "other faults"}}
	for _, p := range pairs {
		ida, idb, _ := ids(p)
		a, b := byID[ida].res, byID[idb].res
		switch {
		case a.Fault == b.Fault && slices.Equal(a.Victims, b.Victims):
			rows[0].add(p)
		case a.Fault == b.Fault:
			rows[1].add(p)
		default:
			rows[2].add(p)
		}
	}
	return rows
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
