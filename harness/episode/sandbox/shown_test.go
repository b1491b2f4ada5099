//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shownFixture is a host folder holding a program folder and an agent folder, beside a file
// no sandbox may show. It lies outside /tmp, which no program may be shown over.
func shownFixture(t *testing.T) (programs, agentDir, sibling string) {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "aa-grade-shown-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	programs, agentDir, sibling = filepath.Join(root, "prog"), filepath.Join(root, "agent"), filepath.Join(root, "secret.txt")
	for _, d := range []string{programs, agentDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(root, 0o755)
	for name, body := range map[string]string{filepath.Join(programs, "tool"): "#!/bin/bash\necho tool-ran\n",
		filepath.Join(agentDir, "agent.sh"): "echo agent-ran\n", sibling: secretValue} {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return programs, agentDir, sibling
}

// TestShownPaths: a program folder and an agent folder are shown read-only where the sandbox
// says, run and read there; nothing of them can be changed, and nothing beside them is shown.
func TestShownPaths(t *testing.T) {
	programs, agentDir, sibling := shownFixture(t)
	exe, _ := os.Executable()
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sb, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
				Programs: []string{programs}, AgentDir: agentDir})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			dir := AgentDirOf(sb)
			if want := map[bool]string{true: agentDir, false: AgentDirPath}[b.Name() == NameLandlock]; dir != want {
				t.Fatalf("AgentDirOf = %q, want %q", dir, want)
			}
			if r := run(t, sb, programs+"/tool && bash "+dir+"/agent.sh"); r.ExitCode != 0 || r.Stdout != "tool-ran\nagent-ran\n" {
				t.Fatalf("the shown program and agent do not run: %+v", r)
			}
			for _, attack := range []string{
				"echo x >> " + programs + "/tool", "touch " + programs + "/new", "rm -f " + programs + "/tool", "chmod 777 " + programs + "/tool",
				"mv " + programs + "/tool " + programs + "/t2", "echo x > " + dir + "/agent.sh", "mkdir " + dir + "/d", "ln -s / " + dir + "/root",
				"cat " + sibling, "ls " + filepath.Dir(programs) + " | grep -q secret",
			} {
				if r := run(t, sb, attack); r.ExitCode == 0 {
					t.Errorf("%q succeeded: %+v", attack, r)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(programs, "tool")); string(b) != "#!/bin/bash\necho tool-ran\n" {
				t.Errorf("the program changed on the host: %q", b)
			}
			if entries, _ := os.ReadDir(agentDir); len(entries) != 1 {
				t.Errorf("the agent folder changed on the host: %v", entries)
			}
		})
	}
}

// TestShownPathsRefused: a path that would show more than asked, or cover the sandbox's own
// places, is refused before anything starts.
func TestShownPathsRefused(t *testing.T) {
	programs, agentDir, _ := shownFixture(t)
	link := filepath.Join(filepath.Dir(programs), "link")
	if err := os.Symlink(programs, link); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	exe, _ := os.Executable()
	for _, c := range []struct {
		name     string
		programs []string
		agentDir string
	}{
		{"the root", []string{"/"}, ""},
		{"a relative path", []string{"prog"}, ""},
		{"an unclean path", []string{programs + "/../prog"}, ""},
		{"through a link", []string{link}, ""},
		{"the workspace", []string{ReferenceWorkdir + "/bin"}, ""},
		{"over /tmp", []string{"/tmp/x"}, ""},
		{"over /etc", []string{"/etc/ssl"}, ""},
		{"holding /proc", nil, "/"},
		{"the scratch folder", nil, f.scratch},
		{"the scratch folder's parent", []string{filepath.Dir(f.scratch)}, ""},
		{"a missing folder", nil, agentDir + "/none"},
		{"a file as the agent folder", nil, programs + "/tool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, b := range backends(t, false) {
				_, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
					Programs: c.programs, AgentDir: c.agentDir})
				if !errors.Is(err, ErrShownPath) {
					t.Errorf("%s: %v, want ErrShownPath", b.Name(), err)
				} else if !strings.Contains(err.Error(), "shown") && !strings.Contains(err.Error(), "show") {
					t.Errorf("%s: %v does not say what was refused", b.Name(), err)
				}
			}
		})
	}
}
