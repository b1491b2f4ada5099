package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
)

// doctorOptions are the flags of aa-grade doctor.
type doctorOptions struct {
	flagsSet
	json                  bool
	sandbox, sandboxImage string
}

func (o *doctorOptions) Validate() error { return validSandbox(o.sandbox) }

func newDoctorCommand() *cli.Command {
	var opts doctorOptions
	return &cli.Command{
		Name:  "doctor",
		Usage: "report which sandboxes work here, the tools inside them, the cache, and which API keys are set",
		Description: "The tools listed are those of the sandbox and image episodes would run in: --sandbox and\n" +
			"--sandbox-image (and their variables) mean what they mean to aa-grade run.\n" +
			"Exit 1 when no isolating sandbox works, or when episodes cannot run in the sandbox and image asked for.\n\n" +
			"Example: aa-grade doctor --json\n" +
			"         aa-grade doctor --sandbox bwrap --sandbox-image sandbox.tar",
		Flags: []cli.Flag{
			jsonFlag(&opts.json, "print JSON"),
			sandboxFlag(&opts.sandbox),
			sandboxImageFlag(&opts.sandboxImage),
		},
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
	Backends []backendReport `json:"backends"`
	Selected string          `json:"selected"` // what --sandbox auto picks; "" when none works
	// Sandbox is the backend episodes would run in (--sandbox, auto: Selected), Image and
	// ImageDigest the image they would run in ("": this machine's own system). Error says
	// why episodes cannot run there (no such backend here, no such image, an image without
	// bash); Tools are then missing.
	Sandbox     string         `json:"sandbox"`
	Image       string         `json:"image,omitempty"`
	ImageDigest string         `json:"image_digest,omitempty"`
	Error       string         `json:"error,omitempty"`
	Tools       *sandbox.Tools `json:"tools,omitempty"`
	Differences []string       `json:"differences"` // from the reference sandbox
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
	auto, selectErr := sandbox.Select(sandbox.NameAuto)
	selectErr = isolationHint(selectErr)
	if selectErr == nil {
		r.Selected = auto.Name()
	}
	// The environment episodes would run in, as run picks it: its tools, or why there is none.
	chosen, err := auto, selectErr
	if opts.sandbox != sandbox.NameAuto {
		chosen, err = sandbox.Select(opts.sandbox)
	}
	probeWith := chosen
	switch {
	case err == nil:
		r.Sandbox = chosen.Name()
		if err = doctorImage(ctx, chosen, opts.sandboxImage, con.err); err != nil {
			r.Image, probeWith = opts.sandboxImage, nil
		}
	case opts.sandbox == sandbox.NameAuto && opts.sandboxImage == "":
		probeWith = sandbox.None{} // no isolating sandbox: still say what the host has
	default:
		probeWith = nil
	}
	if probeWith != nil {
		defer sandbox.Release(probeWith)
		tools, probeErr := sandbox.ProbeTools(ctx, probeWith)
		if probeErr == nil {
			r.Tools, r.Differences = &tools, tools.Differences()
		}
		if r.Sandbox != "" {
			err = imageHint(probeErr)
			r.Image, r.ImageDigest = sandbox.ImageOf(probeWith)
		}
	}
	if ctx.Err() != nil {
		return interrupted(fmt.Errorf("interrupted: %w", ctx.Err()))
	}
	if err != nil {
		r.Error = err.Error()
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
		renderDoctor(stdout, r, columns(stdout))
	}
	switch {
	case opts.sandbox == sandbox.NameAuto && selectErr != nil:
		return badResult(selectErr)
	case err != nil:
		return badResult(fmt.Errorf("episodes cannot run in the sandbox asked for: %w", err))
	}
	return nil
}

// doctorImage makes the backend run episodes in the image ref, as run does ("": its default).
func doctorImage(ctx context.Context, b sandbox.Backend, ref string, progress io.Writer) error {
	if ref == "" {
		return nil
	}
	cache, err := imageCacheDir()
	if err != nil {
		return err
	}
	if err := sandbox.UseImage(ctx, b, ref, cache, imageProgress(progress)); err != nil {
		return imageHint(fmt.Errorf("--sandbox-image: %w", err))
	}
	return nil
}

// renderDoctor prints what works here, each line wrapped to a terminal cols wide (0: any
// width).
func renderDoctor(stdout io.Writer, r doctorReport, cols int) {
	var b bytes.Buffer
	w := &b
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
	switch {
	case selected != "":
	case (sandbox.None{}).Available() == nil:
		selected = "none works: run --sandbox none only if you accept no isolation"
	default: // macOS, Windows: docker or nothing
		selected = "nothing works: " + sandbox.IsolationFix
	}
	fmt.Fprintf(w, "--sandbox auto uses: %s\n", selected)
	switch {
	case r.Sandbox == "":
	case r.Image != "" && r.ImageDigest != "":
		printLine(w, "Episodes run in: the %s sandbox, image %s (%s)", r.Sandbox, r.Image, r.ImageDigest)
	case r.Image != "":
		printLine(w, "Episodes run in: the %s sandbox, image %s", r.Sandbox, r.Image)
	default:
		printLine(w, "Episodes run in: the %s sandbox, on this machine's own system", r.Sandbox)
	}
	switch {
	case r.Error == "":
	case r.Sandbox == "":
		printLine(w, "Episodes cannot run: %s", r.Error)
	default:
		printLine(w, "Episodes cannot run there: %s", r.Error)
	}
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
	if r.Tools != nil && len(r.Differences) == 0 {
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
	fitText(stdout, b.String(), cols)
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
		if value != "" &&
			(strings.HasSuffix(name, "_API_KEY") || name == "HF_TOKEN" || name == "HUGGING_FACE_HUB_TOKEN") {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	if keys == nil {
		keys = []string{}
	}
	return keys
}
