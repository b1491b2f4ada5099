package agents

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrNoHostInstall marks a CLI agent that this machine has no install of to show a sandbox.
var ErrNoHostInstall = errors.New("no install of the agent on this machine to show the sandbox")

// Install is a CLI agent's install on this machine, for a sandbox whose system lacks it: the
// host paths to show read-only at their own path (sandbox.Spec.Programs), and the native
// executable to run there, so that the sandbox needs no Node.js of its own.
type Install struct {
	Paths      []string
	Executable string
}

// Exe is the executable to run, "" when in is nil (the program on the sandbox's PATH).
func (in *Install) Exe() string {
	if in == nil {
		return ""
	}
	return in.Executable
}

// Shown are the host paths a sandbox shows for in (none when nil).
func (in *Install) Shown() []string {
	if in == nil {
		return nil
	}
	return in.Paths
}

// HostInstall finds the CLI on this machine's PATH and its npm package folder. Claude Code's
// program is a native executable in its package; Codex's is a Node.js launcher, so its native
// executable, in the package of its platform, is run instead, and only that package is shown.
func (a Agent) HostInstall() (Install, error) {
	ad, ok := adapters[a.Name]
	if !ok {
		return Install{}, fmt.Errorf("%w: %s is a program of your own (use --agent-dir)", ErrNoHostInstall, a)
	}
	found, err := exec.LookPath(ad.program)
	if err == nil {
		found, err = filepath.EvalSymlinks(found)
	}
	if err == nil {
		found, err = filepath.Abs(found)
	}
	if err != nil {
		return Install{}, fmt.Errorf("%w: %s: %w", ErrNoHostInstall, ad.program, err)
	}
	root := found
	for !strings.HasSuffix(root, string(filepath.Separator)+filepath.Join("node_modules", ad.pkg)) {
		if parent := filepath.Dir(root); parent != root {
			root = parent
			continue
		}
		return Install{}, fmt.Errorf("%w: %s is not in a folder of npm package %s", ErrNoHostInstall, found, ad.pkg)
	}
	in := Install{Paths: []string{root}, Executable: found}
	if ad.native != nil {
		if in, err = ad.native(root); err != nil {
			return Install{}, fmt.Errorf("%w: %w", ErrNoHostInstall, err)
		}
	}
	f, err := elf.Open(in.Executable)
	if err != nil {
		return Install{}, fmt.Errorf("%w: %s is not a native Linux program (%v)", ErrNoHostInstall, in.Executable, err)
	}
	f.Close()
	return in, nil
}

// codexNative is the native Codex of this machine's platform in the package at root: in its
// platform's package (nested in root, or beside it), or in root's own vendor folder.
func codexNative(root string) (Install, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	platform := filepath.Join("@openai", "codex-linux-"+arch)
	for _, dir := range []string{filepath.Join(root, "node_modules", platform), filepath.Join(filepath.Dir(filepath.Dir(root)), platform), root} {
		real, err := filepath.EvalSymlinks(filepath.Join(dir, "vendor", triple))
		if err != nil {
			continue
		}
		if exe := filepath.Join(real, "bin", "codex"); exists(exe) {
			return Install{Paths: []string{real}, Executable: exe}, nil
		}
	}
	return Install{}, fmt.Errorf("no native codex for linux/%s in %s", runtime.GOARCH, root)
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
