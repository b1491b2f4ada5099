package promptset

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// stirrupLayout is a fixture laid out like Stirrup's source tree, in aa-grade's own words.
const stirrupLayout = "testdata/stirrup-layout"

// layoutSums are the sums of the fixture's package files, standing in for the release's.
func layoutSums(t *testing.T, pkg fs.FS) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for name := range stirrup019 {
		b, err := fs.ReadFile(pkg, name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		sums[name] = hex.EncodeToString(sum[:])
	}
	return sums
}

func layoutPackage(t *testing.T) fs.FS {
	t.Helper()
	pkg, err := fs.Sub(os.DirFS(stirrupLayout), "src/stirrup")
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestFromStirrupTakesEveryText(t *testing.T) {
	pkg := layoutPackage(t)
	p, err := fromStirrupFS(pkg, layoutSums(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	builtin := Builtin()
	want := map[string]string{
		keySystem: "FIXTURE base: work through the job in at most {{max_turns}} steps, then hand it in.\n FIXTURE nobody answers.\n\nFIXTURE the caller says:\n" +
			adapterRole,
		keyShellDescription: "FIXTURE runs a command.", keyShellCmdDescription: "FIXTURE a bash command.",
		keyShellParamsDesc: "FIXTURE what to run.", keyFinishParamsDesc: "FIXTURE why stopping.",
		keyFinishDescription: "FIXTURE stop here.", keyFinishReasonDesc: "FIXTURE why you stop.", keyFinishPathsDesc: "FIXTURE files you hand back.",
		keyTurnsLeft: "FIXTURE {{turns_left}} turns to go. Keep at it.", keyLastTurn: "FIXTURE final turn now.", keyContinue: "FIXTURE go on",
		keySummaryRequest: "FIXTURE summary request: condense what happened so far.\n", keySummaryBridge: "FIXTURE bridge.\n\n{{summary}}\n\nCarry on.",
		keySummaryAck:   "FIXTURE noted.",
		keyShellResult:  "<r><c>{{exit_code}}</c><o>{{stdout}}</o><e>{{stderr}}</e></r>",
		keyShellTimeout: "<r><k>FIXTURE_timeout</k><d>FIXTURE stopped after {{command_timeout}} s</d></r>",
		keyShellError:   "<r><k>FIXTURE_failed</k><d>{{error}}</d></r>", keyTruncationNotice: "\n[FIXTURE truncated: {{total}} over {{output_limit}}]\n",
		keyShellInvalidArguments: "FIXTURE bad arguments", keyFinishInvalidArguments: "FIXTURE bad arguments",
		keyUnknownTool: "FIXTURE no tool {{tool}}", keyFinishTwoCalls: "FIXTURE {{finish_tool}} twice (['{{finish_tool}}']); one at a time.",
		keyFinishNoOutput: "FIXTURE absent: ['{{output_file}}'].", keyFinishPathMissing: "FIXTURE absent: ['{{path}}'].",
	}
	for _, k := range promptKeys {
		got := p.texts[k.name]
		if w, ok := want[k.name]; ok && got != w {
			t.Errorf("%s = %q, want %q", k.name, got, w)
		}
		if _, ok := want[k.name]; !ok && got != builtin.texts[k.name] {
			t.Errorf("%s = %q, want the built-in set's", k.name, got)
		}
	}
	// The set is a set like any other: written out and read back, it is the same.
	back, err := Parse(p.Format())
	if err != nil || back.SHA256() != p.SHA256() {
		t.Fatalf("the written set reads back as %v, %v", back, err)
	}
}

func TestFromStirrupRefusesOtherVersions(t *testing.T) {
	// The fixture is not release 0.1.9: every file differs, and each is named.
	_, err := FromStirrup(stirrupLayout)
	if !errors.Is(err, ErrStirrupVersion) {
		t.Fatalf("FromStirrup(fixture) = %v, want ErrStirrupVersion", err)
	}
	if !textcheck.Has(t, "FromStirrup(fixture)'s error", err.Error(), "core/agent.py", "utils/text.py") {
		t.FailNow()
	}
	pkg := layoutPackage(t)
	sums := layoutSums(t, pkg)
	sums["tools/finish.py"] = strings.Repeat("0", 64)
	_, err = fromStirrupFS(pkg, sums)
	if !errors.Is(err, ErrStirrupVersion) {
		t.Fatalf("one file changed: %v, want ErrStirrupVersion", err)
	}
	textcheck.Has(t, "the error of one file changed", err.Error(), "tools/finish.py differ")
	if !textcheck.Lacks(t, "the error of one file changed", err.Error(), "agent.py") || t.Failed() {
		t.FailNow()
	}
}

func TestFromStirrupFailures(t *testing.T) {
	for name, path := range map[string]string{"missing": filepath.Join(t.TempDir(), "nothing"), "empty folder": t.TempDir()} {
		if _, err := FromStirrup(path); !errors.Is(err, ErrNotStirrup) {
			t.Errorf("%s: %v, want ErrNotStirrup", name, err)
		}
	}
	notWheel := filepath.Join(t.TempDir(), "stirrup.whl")
	os.WriteFile(notWheel, []byte("not a zip"), 0o644)
	if _, err := FromStirrup(notWheel); !errors.Is(err, ErrNotStirrup) {
		t.Errorf("a file that is not a wheel: %v", err)
	}
	// A package missing a file, and a file whose text is not where the release has it.
	pkg := fstest.MapFS{}
	fs.WalkDir(layoutPackage(t), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(layoutPackage(t), p)
			pkg[p] = &fstest.MapFile{Data: b}
		}
		return nil
	})
	sums := layoutSums(t, pkg)
	delete(pkg, "utils/text.py")
	if _, err := fromStirrupFS(pkg, sums); !errors.Is(err, ErrNotStirrup) || !strings.Contains(err.Error(), "utils/text.py") {
		t.Errorf("a missing file: %v", err)
	}
	pkg["utils/text.py"] = &fstest.MapFile{Data: []byte("def truncate_msg(msg, max_length):\n    return msg[: max_length // 2] + f\"{secret}\"\n")}
	sums = layoutSums(t, pkg)
	if _, err := fromStirrupFS(pkg, sums); err == nil || !strings.Contains(err.Error(), "unexpected field {secret}") {
		t.Errorf("an unknown field: %v", err)
	}
}

// TestOpenStirrupLayouts: the package is found in a source tree, in an installed package
// folder (or the folder holding it) and in a wheel.
func TestOpenStirrupLayouts(t *testing.T) {
	wheel := filepath.Join(t.TempDir(), "stirrup-0.1.9-py3-none-any.whl")
	f, err := os.Create(wheel)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	fs.WalkDir(layoutPackage(t), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(layoutPackage(t), p)
			w, _ := z.Create("stirrup/" + p)
			w.Write(b)
		}
		return nil
	})
	z.Close()
	f.Close()
	for _, path := range []string{stirrupLayout, filepath.Join(stirrupLayout, "src"), filepath.Join(stirrupLayout, "src/stirrup"), wheel} {
		pkg, closer, err := openStirrup(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if _, err := fs.ReadFile(pkg, "core/agent.py"); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		closer.Close()
	}
}

func TestPyLiterals(t *testing.T) {
	for src, want := range map[string]string{
		`x = "a" 'b'`: "ab",
		"x = (\n  f\"a{b}\"  # note\n  r'\\n'\n)": `a{b}\n`,
		`x = """one "two"\nthree"""`:              "one \"two\"\nthree",
		`x = f'tab\tend' + "no"`:                  "tab\tend",
	} {
		got, err := pyStringAfter(src, "x =")
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", src, got, err, want)
		}
	}
	for _, src := range []string{`x = 42`, "x = \"open\n\"", `y = "a"`} {
		if got, err := pyStringAfter(src, "x ="); !errors.Is(err, errNoLiteral) {
			t.Errorf("%s: %q, %v; want no literal", src, got, err)
		}
	}
}
