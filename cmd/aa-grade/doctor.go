package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// doctorOptions are the flags of aa-grade doctor.
type doctorOptions struct {
	flagsSet
	json bool
}

func (o *doctorOptions) Validate() error { return nil }

func newDoctorCommand() *cli.Command {
	var opts doctorOptions
	return &cli.Command{
		Name:  "doctor",
		Usage: "report which sandboxes work here, the tools inside them, the cache, and which API keys are set",
		Description: "Exit 1 when no isolating sandbox works.\n\n" +
			"Example: aa-grade doctor --json",
		Flags:  []cli.Flag{jsonFlag(&opts.json, "print JSON")},
		Action: action(&opts, runDoctor),
	}
}

type backendReport struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	// Guarantees are what the backend keeps here against a hostile model (none when it is
	// unavailable).
	Guarantees []sandbox.Guarantee `json:"guarantees"`
}

type doctorReport struct {
	Backends    []backendReport `json:"backends"`
	Selected    string          `json:"selected"` // what --sandbox auto picks; "" when none works
	Tools       *sandbox.Tools  `json:"tools,omitempty"`
	Differences []string        `json:"differences"` // from the reference sandbox
	Cache       struct {
		Dir       string `json:"dir"`
		FreeBytes uint64 `json:"free_bytes"`
	} `json:"cache"`
	Keys []string `json:"keys"` // names of the API key variables set, never their values
	// LeftoversRemoved are the scratch folders, cgroups and containers of dead runs doctor
	// removed.
	LeftoversRemoved sandbox.Leftovers `json:"leftovers_removed"`
}

func runDoctor(ctx context.Context, opts doctorOptions, args []string, con console) error {
	if err := noArgs("doctor", args); err != nil {
		return err
	}
	var r doctorReport
	for _, b := range sandbox.Backends() {
		br := backendReport{Name: b.Name(), OK: true, Guarantees: sandbox.Guarantees(b)}
		if err := b.Available(); err != nil {
			br.OK, br.Reason = false, err.Error()
		} else if b.Name() == sandbox.NameNone {
			br.Reason = "works, but isolates nothing"
		}
		r.Backends = append(r.Backends, br)
	}
	r.LeftoversRemoved = sandbox.CleanLeftovers()
	r.Differences = []string{}
	chosen, selectErr := sandbox.Select(sandbox.NameAuto)
	probeWith := chosen
	if selectErr == nil {
		r.Selected = chosen.Name()
	} else {
		probeWith = sandbox.None{} // still say what the host has
	}
	if tools, err := sandbox.ProbeTools(ctx, probeWith); err == nil {
		r.Tools, r.Differences = &tools, tools.Differences()
	} else {
		r.Differences = append(r.Differences, "could not list the tools: "+err.Error())
	}
	r.Cache.Dir = hubConfig().CacheDir
	r.Cache.FreeBytes = freeBytes(r.Cache.Dir)
	r.Keys = apiKeysSet()

	stdout := con.out
	if opts.json {
		if err := printJSON(stdout, r); err != nil {
			return err
		}
	} else {
		renderDoctor(stdout, r)
	}
	if selectErr != nil {
		return badResult(selectErr)
	}
	return nil
}

func renderDoctor(w interface{ Write([]byte) (int, error) }, r doctorReport) {
	fmt.Fprintln(w, "Sandbox backends:")
	for _, b := range r.Backends {
		status := "ok"
		if !b.OK {
			status = "unavailable"
		}
		line := fmt.Sprintf("  %-8s %s", b.Name, status)
		if b.Reason != "" {
			line += " (" + b.Reason + ")"
		}
		printLine(w, "%s", line)
		for _, g := range b.Guarantees {
			mark := "yes"
			if !g.Holds {
				mark = "NO "
			}
			printLine(w, "    %s %-18s %s", mark, g.Name, g.Detail)
		}
	}
	selected := r.Selected
	if selected == "" {
		selected = "none works: run --sandbox none only if you accept no isolation"
	}
	fmt.Fprintf(w, "--sandbox auto uses: %s\n", selected)
	if r.Tools != nil {
		var have []string
		for c, ok := range r.Tools.Commands {
			if ok {
				have = append(have, c)
			}
		}
		sort.Strings(have)
		fmt.Fprintf(w, "Tools in the sandbox: %s\n", strings.Join(have, " "))
	}
	if len(r.Differences) == 0 {
		fmt.Fprintln(w, "Same tools and Python packages as the reference sandbox.")
	}
	for _, d := range r.Differences {
		printLine(w, "Differs from the reference sandbox: %s", d) // versions as the sandbox printed them
	}
	if len(r.LeftoversRemoved) > 0 {
		fmt.Fprintf(w, "Removed %s left by aa-grade runs that died.\n", r.LeftoversRemoved)
	}
	fmt.Fprintf(w, "Hugging Face cache: %s (%s free)\n", r.Cache.Dir, humanBytes(int64(r.Cache.FreeBytes)))
	keys := "none"
	if len(r.Keys) > 0 {
		keys = strings.Join(r.Keys, ", ")
	}
	fmt.Fprintf(w, "API keys set (names only): %s\n", keys)
}

// freeBytes is the free space of the file system holding dir (or its nearest existing
// parent).
func freeBytes(dir string) uint64 {
	for d := dir; ; d = filepath.Dir(d) {
		free, err := diskFree(d)
		if err == nil {
			return free
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return 0
		}
	}
}

// apiKeysSet lists the names of the credentials in the environment.
func apiKeysSet() []string {
	var keys []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if value != "" && (strings.HasSuffix(name, "_API_KEY") || name == "HF_TOKEN" || name == "HUGGING_FACE_HUB_TOKEN") {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	if keys == nil {
		keys = []string{}
	}
	return keys
}
