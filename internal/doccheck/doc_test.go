package doccheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedIdentifiersAreDocumented keeps the API reference whole: every exported type,
// function, method, constant and variable of the library's packages has a doc comment (a
// group's comment counts for its members), and every package has a package comment. Commands,
// examples, benchmarks and internal packages are not API.
func TestExportedIdentifiersAreDocumented(t *testing.T) {
	skip := map[string]bool{"bench": true, "cmd": true, "examples": true, "internal": true, "testdata": true, "node_modules": true}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		checkPackageDocs(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkPackageDocs(t *testing.T, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	fset := token.NewFileSet()
	hasDoc := map[string]bool{} // package name → one of its files has a package comment
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		hasDoc[f.Name.Name] = hasDoc[f.Name.Name] || f.Doc != nil
		checkFileDocs(t, fset, path, f)
	}
	for pkg, ok := range hasDoc {
		if !ok {
			t.Errorf("package %s (%s) has no package comment", pkg, dir)
		}
	}
}

func checkFileDocs(t *testing.T, fset *token.FileSet, name string, f *ast.File) {
	missing := func(pos token.Pos, what string) {
		t.Errorf("%s: %s has no doc comment", fset.Position(pos), what)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv == nil {
				missing(d.Pos(), "func "+d.Name.Name)
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				missing(d.Pos(), "method "+recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						missing(s.Pos(), "type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
							missing(n.Pos(), n.Name)
						}
					}
				}
			}
		}
	}
}

// receiverName returns the name of a method's receiver type.
func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
