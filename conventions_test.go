package civnode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sourceFiles parses every non-test Go file of the module's packages (not
// docs/examples, whose programs observers copy, and not the benchmark peers,
// which are modules of their own) and calls check with each.
func sourceFiles(t *testing.T, check func(fset *token.FileSet, path string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" ||
			d.Name() == "node_modules" || d.Name() == "docs" || path == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		check(fset, filepath.ToSlash(path), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
}

// TestSentinelsInErrorsGo: a package's sentinel errors (package-level
// variables made by errors.New or fmt.Errorf) are declared in its errors.go,
// where a reader finds every way the package can fail. Their messages do not
// start with the package's name: callers wrap them with the operation
// ("open event log: wrong node key"), so a prefix would only repeat itself.
func TestSentinelsInErrorsGo(t *testing.T) {
	sourceFiles(t, func(fset *token.FileSet, path string, f *ast.File) {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !isErrorConstructor(vs.Values[i]) {
						continue
					}
					if filepath.Base(path) != "errors.go" {
						t.Errorf("%s: sentinel %s belongs in %s", fset.Position(name.Pos()), name.Name, filepath.Join(filepath.Dir(path), "errors.go"))
					}
					call := vs.Values[i].(*ast.CallExpr)
					if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						msg, _ := strconv.Unquote(lit.Value)
						if strings.HasPrefix(msg, f.Name.Name+": ") {
							t.Errorf("%s: sentinel %s's message %q repeats the package's name", fset.Position(name.Pos()), name.Name, msg)
						}
					}
				}
			}
		}
	})
}

// isErrorConstructor says whether e is errors.New(…) or fmt.Errorf(…).
func isErrorConstructor(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf")
}

// TestLogKeysAreConstants: every attribute key of a log line is a constant of
// internal/logkey, so one field keeps one name across packages; a literal key
// at a call site is refused. It reads the calls by their shape: a logger's
// Debug, Info, Warn or Error with a literal message, Log and LogAttrs, With,
// and slog's attribute constructors.
func TestLogKeysAreConstants(t *testing.T) {
	attrs := map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
		"Bool": true, "Duration": true, "Time": true, "Any": true, "Group": true}
	sourceFiles(t, func(fset *token.FileSet, path string, f *ast.File) {
		if strings.HasPrefix(path, "internal/logkey/") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			start := -1
			switch name := sel.Sel.Name; {
			case isSlog(sel.X) && attrs[name]:
				checkLogKey(t, fset, call.Args[0])
				if name == "Group" {
					start = 1
				}
			case name == "Debug" || name == "Info" || name == "Warn" || name == "Error":
				if len(call.Args) > 0 && isStringLit(call.Args[0]) {
					start = 1
				}
			case name == "DebugContext" || name == "InfoContext" || name == "WarnContext" || name == "ErrorContext":
				start = 2
			case name == "Log" || name == "LogAttrs":
				start = 3
			case name == "With":
				start = 0
			}
			for i := start; start >= 0 && i < len(call.Args); {
				if isSlogAttr(call.Args[i]) {
					i++
					continue
				}
				checkLogKey(t, fset, call.Args[i])
				i += 2
			}
			return true
		})
	})
}

func checkLogKey(t *testing.T, fset *token.FileSet, key ast.Expr) {
	t.Helper()
	if isStringLit(key) {
		t.Errorf("%s: log key %s is a literal; use a constant of internal/logkey", fset.Position(key.Pos()), key.(*ast.BasicLit).Value)
	}
}

func isStringLit(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING
}

func isSlog(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "slog"
}

// isSlogAttr says whether e makes a slog.Attr in place (slog.String(…) and
// the like), which takes one argument's place, not a key's and a value's.
func isSlogAttr(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && isSlog(sel.X) && sel.Sel.Name != "New"
}
