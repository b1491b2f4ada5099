package assertcheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestCompoundFinds: the check names the if of three || operands that reports a failure, and
// none of those the rule allows: two operands, a body that does not report, fmt.Errorf,
// err.Error(), a chain under &&.
func TestCompoundFinds(t *testing.T) {
	const src = `package x

import (
	"fmt"
	"testing"
)

func TestX(t *testing.T) {
	a, b, c := 1, 2, 3
	if a != 1 || b != 2 || c != 3 { // line 10: compound
		t.Errorf("a %d b %d c %d", a, b, c)
	}
	if a < 0 || a > 9 {
		t.Fatalf("a = %d, want 0..9", a)
	}
	if a == 0 || b == 0 || c == 0 {
		return
	}
	if a == 0 || b == 0 || c == 0 {
		_ = fmt.Errorf("zero")
	}
	var err error
	if a == 0 || b == 0 || c == 0 {
		t.Log(err.Error())
	}
	if a == 0 && (b == 0 || c == 0 || a == 1) {
		t.Fatal("under &&")
	}
	if (a == 0 || b == 0) || c == 0 { // line 29: compound, parentheses aside
		func() { t.Fatal("abc") }()
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, p := range Compound(fset, f) {
		lines = append(lines, p.Line)
	}
	if got, want := lines, []int{10, 29}; !slices.Equal(got, want) {
		t.Errorf("compound ifs on lines %v, want %v", got, want)
	}
}

// TestNoCompoundAssertions: no test of the module has an if of three or more || operands that
// reports a failure (docs/design.md, Conventions): each condition that can fail is its own
// check, saying what it wanted and what it got.
func TestNoCompoundAssertions(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, p := range Compound(fset, f) {
			rel, _ := filepath.Rel(root, p.Filename)
			t.Errorf("%s:%d: an if of %d or more || operands reports one failure; check each condition on its own", filepath.ToSlash(rel), p.Line, MinOperands)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no test file under %s", root)
	}
}
