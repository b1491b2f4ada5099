// Package assertcheck finds the compound assertions docs/design.md rules out of tests: an if
// whose condition is a chain of three or more || operands and whose body reports a failure
// (Error, Errorf, Fatal, Fatalf), so that the failure cannot say which operand held.
package assertcheck

import (
	"go/ast"
	"go/token"
)

// MinOperands is the length of an || chain from which an if reporting a failure is compound.
const MinOperands = 3

// reporters are the failure-reporting methods of testing.T, B and TB (and of anything with
// those method names).
var reporters = map[string]bool{"Error": true, "Errorf": true, "Fatal": true, "Fatalf": true}

// Compound gives the position of each if of f whose condition is a chain of MinOperands or
// more || operands and whose body calls a failure-reporting method.
func Compound(fset *token.FileSet, f *ast.File) []token.Position {
	imports := map[string]bool{}
	for _, imp := range f.Imports {
		name := importName(imp)
		imports[name] = true
	}
	var found []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		s, ok := n.(*ast.IfStmt)
		if ok && operands(s.Cond) >= MinOperands && reports(s.Body, imports) {
			found = append(found, fset.Position(s.Pos()))
		}
		return true
	})
	return found
}

// operands counts the operands of the || chain e is (1 when e is no ||), parentheses aside.
func operands(e ast.Expr) int {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return operands(e.X)
	case *ast.BinaryExpr:
		if e.Op == token.LOR {
			return operands(e.X) + operands(e.Y)
		}
	}
	return 1
}

// reports says whether body calls a failure-reporting method: x.Error(...) with arguments
// (err.Error() reads an error), x.Errorf, x.Fatal or x.Fatalf, where x is no imported package
// (fmt.Errorf makes an error).
func reports(body *ast.BlockStmt, imports map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !reporters[sel.Sel.Name] || (sel.Sel.Name == "Error" && len(call.Args) == 0) {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] {
			return true
		}
		found = true
		return false
	})
	return found
}

// importName is the name imp's package is known by in its file.
func importName(imp *ast.ImportSpec) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	path := imp.Path.Value[1 : len(imp.Path.Value)-1]
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}
