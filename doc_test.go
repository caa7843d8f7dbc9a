package toolgrain_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
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
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	for _, pkg := range pkgs {
		hasDoc := false
		for name, f := range pkg.Files {
			if f.Doc != nil {
				hasDoc = true
			}
			checkFileDocs(t, fset, name, f)
		}
		if !hasDoc {
			t.Errorf("package %s (%s) has no package comment", pkg.Name, dir)
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
