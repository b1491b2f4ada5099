package sandbox

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// probeTools are the commands the task prompt lets a model count on.
var probeTools = []string{"bash", "cat", "ls", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "grep", "sed", "awk",
	"find", "xargs", "jq", "python3", "python"}

// Tools is what commands can use inside a sandbox.
type Tools struct {
	Commands map[string]bool   `json:"commands"` // name -> found on PATH
	Python   map[string]string `json:"python"`   // package -> version ("" when missing)
}

// pythonTwins are the two names of Python the reference sandbox has: one missing while the
// other is there is no Python missing, and is said so.
var pythonTwins = map[string]string{"python": "python3", "python3": "python"}

// Differences lists how the tools differ from the reference sandbox.
func (t Tools) Differences() []string {
	var out []string
	for _, c := range probeTools {
		switch twin := pythonTwins[c]; {
		case t.Commands[c]:
		case twin != "" && t.Commands[twin]:
			out = append(out, fmt.Sprintf("no %s command, only %s", c, twin))
		default:
			out = append(out, "no "+c)
		}
	}
	for _, pkg := range sortedNames(shellspec.ReferencePackages) {
		want, got := shellspec.ReferencePackages[pkg], t.Python[pkg]
		switch {
		case got == "":
			out = append(out, fmt.Sprintf("Python package %s missing (reference %s)", pkg, want))
		case got != want:
			out = append(out, fmt.Sprintf("Python package %s %s (reference %s)", pkg, got, want))
		}
	}
	return out
}

func sortedNames(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func pythonList(names []string) string { return `["` + strings.Join(names, `", "`) + `"]` }

// startEmpty starts a sandbox of the backend on an empty workspace; stop closes it and
// removes its scratch folder.
func startEmpty(ctx context.Context, b Backend, programs []string) (sb Sandbox, stop func(), err error) {
	dir, remove, err := NewScratch()
	if err != nil {
		return nil, nil, err
	}
	snap, scratch := dir+"/snapshot", dir+"/scratch"
	for _, d := range []string{snap, scratch} {
		if err := os.Mkdir(d, 0o755); err != nil {
			remove()
			return nil, nil, err
		}
	}
	if sb, err = b.Start(ctx, Spec{Snapshot: snap, Scratch: scratch, Programs: programs}); err != nil {
		remove()
		return nil, nil, err
	}
	// Closed once its answer is in hand: what it leaves is the scratch folder's to remove.
	return sb, func() { _ = sb.Close(); remove() }, nil
}

// RunEmpty runs a command in a sandbox of the backend on an empty workspace, for what must be
// known of the sandbox before a run (the version of the agent an agent run finds there),
// showing programs as Spec.Programs does.
func RunEmpty(ctx context.Context, b Backend, cmd string, timeout time.Duration, programs []string) (Result, error) {
	sb, stop, err := startEmpty(ctx, b, programs)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	return sb.Run(ctx, cmd, timeout)
}

// tryShell runs `true` in a sandbox just started over an image: nil when the image can run
// an episode, else why not (see cannotRunEpisode) or ctx's error.
func tryShell(ctx context.Context, sb Sandbox, ref, arch, guest string) error {
	res, err := sb.Run(ctx, "true", time.Minute)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if failed := shellError(res, err); failed != nil {
		return cannotRunEpisode(ref, arch, guest, err != nil, failed)
	}
	return nil
}

// cannotRunEpisode says that an image cannot run an episode, and what it needs. guest is the
// aa-grade program run in it; guestDied says it never answered, which a dynamically linked
// one does not in an image without its loader.
func cannotRunEpisode(ref, arch, guest string, guestDied bool, err error) error {
	fix := "use an image with bash, as the reference one (deploy/sandbox/Dockerfile)"
	if interp := interpreter(guest); guestDied && interp != "" {
		fix = "this aa-grade is dynamically linked (it needs " + interp + " inside the image): use a static build " +
			"(CGO_ENABLED=0 go build, make build), which runs in any image; or " + fix
	}
	return imageError{
		fmt.Errorf("image %s cannot run an episode (it needs bash and a linux/%s kernel): %w; %s", ref, arch, err, fix)}
}

// interpreter is the dynamic loader a Linux program needs ("" for a static one).
func interpreter(program string) string {
	f, err := elf.Open(program)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
			if err != nil {
				return ""
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

// shellError is why a command that should have run did not: the guest's error, or bash's.
func shellError(res Result, err error) error {
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0:
		if msg := strings.TrimSpace(res.Stderr); msg != "" {
			return errors.New(msg)
		}
		return fmt.Errorf("exit %d", res.ExitCode)
	}
	return nil
}

// ProbeTools starts a sandbox of the backend on an empty workspace and asks it which tools
// and Python packages it has.
func ProbeTools(ctx context.Context, b Backend) (Tools, error) {
	sb, stop, err := startEmpty(ctx, b, nil)
	if err != nil {
		return Tools{}, err
	}
	defer stop()
	script := "for t in " + strings.Join(probeTools, " ") + "; do command -v $t >/dev/null && echo $t; done; echo ---\n" +
		"python3 - <<'EOF' 2>/dev/null || echo '{}'\n" +
		"import importlib.metadata as m, json\nout = {}\n" +
		"for p in " + pythonList(sortedNames(shellspec.ReferencePackages)) + ":\n" +
		"    try: out[p] = m.version(p)\n    except Exception: out[p] = ''\n" +
		"print(json.dumps(out))\nEOF\n"
	res, err := sb.Run(ctx, script, time.Minute)
	if err != nil {
		return Tools{}, err
	}
	tools := Tools{Commands: map[string]bool{}, Python: map[string]string{}}
	commands, python, ran := strings.Cut(res.Stdout, "---\n")
	if !ran { // no shell ran the script
		if err := shellError(res, nil); err != nil {
			return Tools{}, fmt.Errorf("the sandbox cannot run bash: %w", err)
		}
		return Tools{}, fmt.Errorf("the sandbox's shell printed %q", res.Stdout)
	}
	for _, c := range strings.Fields(commands) {
		tools.Commands[c] = true
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(python)), &tools.Python); err != nil {
		return tools, fmt.Errorf("read the Python packages: %w (%q)", err, python)
	}
	return tools, nil
}
