//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// wine runs the Windows build of aa-grade under Wine, in a Wine prefix of its own: what no
// Windows machine here can run (issue 40). Wine 8.0 lacks bcryptprimitives.dll, whose
// ProcessPrng the Go runtime asks for at start; the prefix gets a shim of it, built from
// testdata/wine/bcryptprimitives.c with MinGW.
//
// Wine's server and its background programs (services.exe, winedevice.exe, explorer.exe,
// plugplay.exe, rpcss.exe) start with the prefix and run until the tests end, their output in
// a log of the prefix: a command that found no server running would start them, and they
// would hold its stderr (and its end) until the server stopped, writing there what befalls
// them as they start and stop ("wine: Unhandled page fault ..." was seen once so). So a
// command's stderr holds aa-grade.exe's own words, and Wine's about aa-grade.exe, only.
type wine struct{ exe, prefix string }

var (
	wineOnce  sync.Once
	wineSetUp *wine
	wineErr   string
)

// wineForTest builds aa-grade.exe and its Wine prefix, once per test binary. Without Wine and
// MinGW it skips, but under CI, where .ci/run installs them, it fails.
func wineForTest(t *testing.T) *wine {
	t.Helper()
	for _, tool := range []string{"wine", "wineboot", "wineserver", "x86_64-w64-mingw32-gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing under CI (.ci/run installs wine64 and gcc-mingw-w64-x86-64)", tool)
			}
			t.Skipf("no %s here (apt-get install wine64 gcc-mingw-w64-x86-64)", tool)
		}
	}
	wineOnce.Do(func() { wineSetUp, wineErr = setUpWine(filepath.Dir(binary)) })
	if wineErr != "" {
		t.Fatal(wineErr)
	}
	return wineSetUp
}

// setUpWine builds aa-grade.exe into dir and makes a Wine prefix there with the shim in its
// system32; it says what failed ("": nothing).
func setUpWine(dir string) (*wine, string) {
	w := &wine{exe: filepath.Join(dir, "aa-grade.exe"), prefix: filepath.Join(dir, "wineprefix")}
	build := exec.Command("go", "build", "-o", w.exe, ".")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, "build aa-grade.exe: " + err.Error() + "\n" + string(out)
	}
	if err := os.MkdirAll(w.prefix, 0o755); err != nil {
		return nil, err.Error()
	}
	log, err := os.Create(w.prefix + ".log")
	if err != nil {
		return nil, err.Error()
	}
	defer log.Close()
	// A server that stays until it is told to stop, and the prefix made, its programs started,
	// by a command of its own.
	server := w.command("wineserver", "--persistent")
	server.Stdout, server.Stderr = log, log
	if err := server.Run(); err != nil {
		return nil, "start Wine's server: " + err.Error()
	}
	afterTests = append(afterTests, func() { _ = w.command("wineserver", "--kill").Run() })
	boot := w.command("wineboot", "--init")
	boot.Stdout, boot.Stderr = log, log
	if err := boot.Run(); err != nil {
		b, _ := os.ReadFile(log.Name())
		return nil, "make the Wine prefix: " + err.Error() + "\n" + string(b)
	}
	dll := filepath.Join(w.prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	gcc := exec.Command("x86_64-w64-mingw32-gcc", "-shared", "-O2", "-o", dll,
		filepath.Join(moduleRoot, "cmd", "aa-grade", "testdata", "wine", "bcryptprimitives.c"), "-ladvapi32")
	if out, err := gcc.CombinedOutput(); err != nil {
		return nil, "build the ProcessPrng shim: " + err.Error() + "\n" + string(out)
	}
	return w, ""
}

// command is a Wine program run in the prefix, Wine's own messages off.
func (w *wine) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "WINEPREFIX="+w.prefix, "WINEDEBUG=-all")
	return cmd
}

// aaGrade runs aa-grade.exe as aaGrade runs the Linux build: from the module's root, with an
// empty Hub cache and no Hub but what env names.
func (w *wine) aaGrade(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runBinary(t, w.aaGradeCommand(t, env, args...))
}

// aaGradeCommand is the command aaGrade runs.
func (w *wine) aaGradeCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := w.command("wine", append([]string{w.exe}, args...)...)
	cmd.Dir = moduleRoot
	cmd.Env = append(cmd.Env, "HF_HUB_CACHE="+winPath(t.TempDir()), "HF_ENDPOINT=http://127.0.0.1:9", "HF_TOKEN=")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// winPath is how Windows programs under Wine name a host path: drive Z: is the host's /.
func winPath(p string) string { return "Z:" + strings.ReplaceAll(p, "/", `\`) }

// sameAsLinux checks that the Windows build did what the Linux build did: the same exit code,
// stdout and stderr, once the host paths the Windows build was given are read back as the
// Linux build was given them (paths: the Windows spelling, then the Linux one, pair by pair).
func sameAsLinux(t *testing.T, what string, linux, windows result, paths ...string) {
	t.Helper()
	r := strings.NewReplacer(paths...)
	windows.stdout, windows.stderr = r.Replace(windows.stdout), r.Replace(windows.stderr)
	if windows.code != linux.code {
		t.Errorf("%s: exit %d under Wine, %d on Linux\nstderr under Wine:\n%s", what, windows.code, linux.code, windows.stderr)
	}
	if windows.stdout != linux.stdout {
		t.Errorf("%s: stdout under Wine:\n%s\non Linux:\n%s", what, windows.stdout, linux.stdout)
	}
	if windows.stderr != linux.stderr {
		t.Errorf("%s: stderr under Wine:\n%s\non Linux:\n%s", what, windows.stderr, linux.stderr)
	}
}

// sameFiles checks that two folders hold the same files, byte for byte once the paths (as in
// sameAsLinux) are read back in the Windows build's.
func sameFiles(t *testing.T, what, linux, windows string, paths ...string) {
	t.Helper()
	r := strings.NewReplacer(paths...)
	want, got := readTree(t, linux), readTree(t, windows)
	if len(want) == 0 {
		t.Errorf("%s: no file written on Linux", what)
	}
	for name, content := range want {
		if name == "run.lock" || name == "report.html" {
			// the lock's owner (process id, start time); the page shows the folder's path cut
			// to its last characters, which the replaced spelling cannot read back
			continue
		}
		written, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: %s written on Linux, not under Wine", what, name)
		case r.Replace(written) != content:
			t.Errorf("%s: %s differs under Wine: %s", what, name, firstDifference(content, r.Replace(written)))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s written under Wine, not on Linux", what, name)
		}
	}
}

// firstDifference quotes the first line where got differs from want.
func firstDifference(want, got string) string {
	wl, gl := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d is %.300q, on Linux %.300q", i+1, g, w)
		}
	}
	return "the same lines"
}

// readTree reads every file of a folder, by its path in it.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
