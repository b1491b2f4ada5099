package agents

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
// executable, in the package of its platform, is run instead, and only that package is shown;
// the Gemini CLI is JavaScript, so its package is shown with this machine's node.
func (a Agent) HostInstall() (Install, error) {
	ad, ok := adapters[a.Name]
	if !ok {
		return Install{}, fmt.Errorf("%w: %s is a program of your own, not a CLI installed with npm", ErrNoHostInstall, a)
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
	in, native := Install{Paths: []string{root}, Executable: found}, found
	if ad.native != nil {
		if in, native, err = ad.native(root); err != nil {
			return Install{}, fmt.Errorf("%w: %w", ErrNoHostInstall, err)
		}
	}
	f, err := elf.Open(native)
	if err != nil {
		return Install{}, fmt.Errorf("%w: %s is not a native Linux program (%v)", ErrNoHostInstall, native, err)
	}
	_ = f.Close() // read only: opening it was the check
	return in, nil
}

// codexNative is the native Codex of this machine's platform in the package at root: in its
// platform's package (nested in root, or beside it), or in root's own vendor folder.
func codexNative(root string) (Install, string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl",
		"arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	platform := filepath.Join("@openai", "codex-linux-"+arch)
	for _, dir := range []string{filepath.Join(root, "node_modules", platform),
		filepath.Join(filepath.Dir(filepath.Dir(root)), platform), root} {
		real, err := filepath.EvalSymlinks(filepath.Join(dir, "vendor", triple))
		if err != nil {
			continue
		}
		if exe := filepath.Join(real, "bin", "codex"); exists(exe) {
			return Install{Paths: []string{real}, Executable: exe}, exe, nil
		}
	}
	return Install{}, "", fmt.Errorf("no native codex for linux/%s in %s", runtime.GOARCH, root)
}

// sandboxPath are the folders of the PATH commands run with in a sandbox (harness/episode/sandbox's),
// where a program shown at its own path is found by name.
var sandboxPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// nodeRuntimeLibs are the libraries a node this machine shows a sandbox may link: the C and
// C++ runtimes, which a glibc system image has (the official and NodeSource builds link
// nothing else). A node that links more (Debian's links libnode, libuv, OpenSSL, ICU, ...)
// would need those of the image too.
var nodeRuntimeLibs = map[string]bool{"libc.so.6": true, "libm.so.6": true, "libdl.so.2": true, "libpthread.so.0": true,
	"libstdc++.so.6": true, "libgcc_s.so.1": true, "ld-linux-x86-64.so.2": true, "ld-linux-aarch64.so.1": true}

// hostNode is this machine's node for a Node.js CLI whose package is at root: the package and
// node are shown at their own paths (node on the sandbox's PATH, where the script's
// "#!/usr/bin/env node" finds it), the script run; node is the native program.
func hostNode(script string) func(root string) (Install, string, error) {
	return func(root string) (Install, string, error) {
		node, err := exec.LookPath("node")
		if err == nil {
			node, err = filepath.EvalSymlinks(node)
		}
		if err != nil {
			return Install{}, "", fmt.Errorf("node (Node.js, which %s runs on): %w", root, err)
		}
		if dir := filepath.Dir(node); !slices.Contains(sandboxPath, dir) {
			return Install{}, "", fmt.Errorf("this machine's node is %s, where a sandbox's PATH does not find it (%s)", node,
				strings.Join(sandboxPath, ":"))
		}
		f, err := elf.Open(node)
		if err != nil {
			return Install{}, "", fmt.Errorf("%s is not a native Linux program (%v)", node, err)
		}
		libs, err := f.ImportedLibraries()
		_ = f.Close() // read only
		if err != nil {
			return Install{}, "", fmt.Errorf("read %s's libraries: %w", node, err)
		}
		for _, lib := range libs {
			if !nodeRuntimeLibs[lib] {
				return Install{}, "", fmt.Errorf(
					"this machine's node links %s, which a sandbox's image may lack (only the C and C++ runtimes are taken "+
						"for granted)", lib)
			}
		}
		exe := filepath.Join(root, script)
		if !exists(exe) {
			return Install{}, "", fmt.Errorf("no %s in %s", script, root)
		}
		return Install{Paths: []string{root, node}, Executable: exe}, node, nil
	}
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
