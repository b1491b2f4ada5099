//go:build linux

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/data"
)

// scanScript is a hostile agent that reads every file its sandbox shows and prints the ones
// that hold one of the needles (LEAK path), then how many it read (SCANNED n). It walks `/` and
// the places the sandbox names ($PWD, $TMPDIR, its own folder: Landlock lets no one list `/`),
// following links (the workspace's to the snapshot), and adds the executables and mapped files
// of the in-sandbox agent (pid 1 wherever there is a pid namespace, and its parent) and its
// own. It skips /proc, /sys and /dev, and in the system folders (the host's or the image's
// own, gigabytes that aa-grade never writes) reads only what is named like aa-grade.
const scanScript = `export LC_ALL=C
self=$AA_GRADE_AGENT_DIR
list=$(mktemp)
{
  find -L / "$PWD" "${TMPDIR:-/tmp}" "$self" \( -path /proc -o -path /sys -o -path /dev \) -prune -o \
    -type f \( -name '*aa-grade*' -o ! \( -path '/usr/*' -o -path '/bin/*' -o -path '/sbin/*' -o -path '/lib*' \) \) -print0 2>/dev/null
  for p in 1 $PPID $$ self; do
    printf '%s\0' /proc/$p/exe
    awk '$6 ~ /^\// {print $6}' /proc/$p/maps 2>/dev/null | sort -u | tr '\n' '\0'
  done
} | sort -zu > "$list"
echo "LISTED $(tr -cd '\0' < "$list" | wc -c)"
needles=$(readlink -f "$self/needles")
n=0 unreadable=0 leaks=
while IFS= read -r -d '' f; do
  [ "$(readlink -f "$f" 2>/dev/null)" = "$needles" ] && continue
  [ -r "$f" ] || { unreadable=$((unreadable+1)); continue; }
  n=$((n+1))
  if grep -a -q -F -f "$self/needles" -- "$f" 2>/dev/null; then leaks="$leaks
LEAK $f"; fi
done < "$list"
echo "UNREADABLE $unreadable$leaks"
echo "SCANNED $n"
`

// TestNoAnswerInWhatTheSandboxShows: a hostile agent reads every file each backend shows it,
// as root and as a normal user, and finds none of the demo's answers: neither a ground
// truth's lines nor the bytes of the embedded archive that holds them (the aa-grade binary a
// sandbox runs is a copy without them, issue 35). A control file of its folder proves the
// scan finds what is there.
func TestNoAnswerInWhatTheSandboxShows(t *testing.T) {
	control := "control-" + randomHex(t)
	agentDir := sharedDir(t)
	needles := append(answerNeedles(t), control)
	for name, content := range map[string]string{"scan.sh": scanScript, "needles": strings.Join(needles, "\n") + "\n",
		"control.txt": "the scan finds " + control + " here\n"} {
		if err := os.WriteFile(filepath.Join(agentDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range agentRunners(t) {
		for _, sb := range r.backends {
			t.Run(r.name+"/"+sb[1], func(t *testing.T) {
				home := r.ownDir(t)
				out := filepath.Join(home, "run")
				res := r.run(t, home, nil, append([]string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901", "--repeats", "1",
					"--out", out, "--agent-dir", agentDir, "--agent", `command:bash "$AA_GRADE_AGENT_DIR/scan.sh"`}, sb...)...)
				stdout := agentStdout(t, filepath.Join(out, "episodes", "Scenario-901", "1"))
				t.Logf("exit %d; the agent's last lines: %s", res.code, lastLines(stdout, 3))
				leaks := linesWith(stdout, "LEAK ")
				var controls int
				for _, l := range leaks {
					if strings.HasSuffix(l, "/control.txt") {
						controls++
						continue
					}
					t.Errorf("the sandbox shows an answer: %s", l)
				}
				if controls == 0 {
					t.Errorf("the scan did not find its control file: it scanned nothing useful\n%s%s", stdout, res.stderr)
				}
				scanned := linesWith(stdout, "SCANNED ")
				if len(scanned) != 1 {
					t.Fatalf("the scan did not end\n%s%s", stdout, res.stderr)
				}
				if n, _ := strconv.Atoi(strings.TrimPrefix(scanned[0], "SCANNED ")); n < 20 {
					t.Errorf("the scan read %d files, fewer than the snapshot has", n)
				}
			})
		}
	}
}

// answerNeedles are what would give the demo's answers away, as lines of a grep -F pattern
// file: each line of a ground truth that no other file of the demo holds (the entities' names
// are in the snapshots, where they belong), and windows of the compressed archive across it.
func answerNeedles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	archive := data.DemoArchive()
	if err := data.UnpackTarZst(bytes.NewReader(archive), dir); err != nil {
		t.Fatal(err)
	}
	var truths, others [][]byte
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name() == data.GroundTruthFile {
			truths = append(truths, b)
		} else if d.Name() != "data.jsonl" { // the index, never shown
			others = append(others, b)
		}
		return nil
	})
	if len(truths) < 12 {
		t.Fatalf("%d ground truths in the demo", len(truths))
	}
	seen := map[string]bool{}
	var needles []string
	for _, gt := range truths {
		for _, line := range strings.Split(string(gt), "\n") {
			line = strings.TrimSpace(line)
			if len(line) < 24 || seen[line] || inAny(others, line) {
				continue
			}
			seen[line] = true
			needles = append(needles, line)
		}
	}
	if len(needles) < 12 {
		t.Fatalf("only %d lines of the ground truths are theirs alone", len(needles))
	}
	const windows, size = 16, 40
	for i := range windows {
		at := len(archive) * i / windows
		for bytes.ContainsAny(archive[at:at+size], "\n\r\x00") {
			at++
		}
		needles = append(needles, string(archive[at:at+size]))
	}
	return needles
}

// inAny says whether one of files holds s.
func inAny(files [][]byte, s string) bool {
	for _, f := range files {
		if bytes.Contains(f, []byte(s)) {
			return true
		}
	}
	return false
}

// randomHex is 16 random hex digits.
func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// lastLines are the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
