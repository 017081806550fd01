package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serialMark opens the doc comment line of a test that must run alone.
const serialMark = "Serial: "

// Every test runs in parallel with the others of its package, or says in
// one line of its doc comment why it cannot:
//
//	// Serial: real time: the client's timings against the simulator's.
//	func TestMeasurementsMatchGroundTruth(t *testing.T) {
//
// A test is serial when it measures wall-clock time (real sockets and a
// real-time simulator, sleeps, bounds on how long something takes), reads
// process-wide state (the heap, allocations) or changes it (t.Setenv,
// t.Chdir, a package variable). Everything else calls t.Parallel() first
// thing, so the suite stays fast on two cores; logic is tested in virtual
// time (testing/synctest), which runs in parallel. Build-tagged files
// count too.
func TestEveryTestIsParallelOrSaysWhy(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	tests := 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		n, problems := parallelProblems(fset, f, rel)
		tests += n
		for _, p := range problems {
			t.Error(p)
		}
		return nil
	})
	if tests < 100 {
		t.Fatalf("found only %d tests: is the test run from its own directory?", tests)
	}
}

// parallelProblems checks the tests of one file (named name in the
// messages) against TestEveryTestIsParallelOrSaysWhy's rule: how many it
// holds, and what is wrong with them.
func parallelProblems(fset *token.FileSet, f *ast.File, name string) (int, []string) {
	tests := 0
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
			continue
		}
		t := testingT(fn)
		if t == "" {
			continue // TestMain, or not a test
		}
		tests++
		at := fset.Position(fn.Pos())
		at.Filename = name
		why, serial := serialReason(fn.Doc)
		parallel := callsParallel(fn.Body, t)
		switch {
		case serial && why == "":
			out = append(out, fmt.Sprintf("%s: %s: its %q line gives no reason", at, fn.Name.Name, strings.TrimSpace(serialMark)))
		case serial && parallel:
			out = append(out, fmt.Sprintf("%s: %s calls %s.Parallel() and says it is serial (%s): choose one", at, fn.Name.Name, t, why))
		case !serial && !parallel:
			out = append(out, fmt.Sprintf("%s: %s neither calls %s.Parallel() nor says why it must run alone (a %q line in its doc comment): see TestEveryTestIsParallelOrSaysWhy", at, fn.Name.Name, t, "// "+serialMark+"why"))
		case parallel:
			if call := processWide(fn.Body); call != "" {
				out = append(out, fmt.Sprintf("%s: %s runs in parallel and calls %s, which changes the whole process: make it serial (%q)", at, fn.Name.Name, call, "// "+serialMark+"why"))
			}
		}
	}
	return tests, out
}

// testingT is the name of fn's *testing.T parameter when fn is a test
// function, and "" when it is not.
func testingT(fn *ast.FuncDecl) string {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 || fn.Type.Results != nil {
		return ""
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return ""
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "testing" {
		return ""
	}
	return ps[0].Names[0].Name
}

// serialReason is the reason on the doc's serial line, and whether it has one.
func serialReason(doc *ast.CommentGroup) (string, bool) {
	if doc == nil {
		return "", false
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		if why, ok := strings.CutPrefix(line, serialMark); ok {
			return strings.TrimSpace(why), true
		}
		if strings.TrimSpace(line) == strings.TrimSpace(serialMark) {
			return "", true
		}
	}
	return "", false
}

// callsParallel says whether t.Parallel() is one of body's own statements
// (not inside a subtest or a closure).
func callsParallel(body *ast.BlockStmt, t string) bool {
	for _, st := range body.List {
		if isCall(st, t, "Parallel") {
			return true
		}
	}
	return false
}

func isCall(st ast.Stmt, recv, method string) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != method {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == recv
}

// processWide is the first call in body that changes the whole process
// (its environment or working directory), "" when there is none.
func processWide(body *ast.BlockStmt) string {
	found := ""
	ast.Inspect(body, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || found != "" {
			return found == ""
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch sel.Sel.Name {
		case "Setenv", "Chdir", "Unsetenv", "Clearenv":
			if x.Name == "os" || x.Name == "t" {
				found = x.Name + "." + sel.Sel.Name
			}
		}
		return true
	})
	return found
}

// The rule's checker finds each way a test can break it, and passes the
// two ways of keeping it.
func TestParallelRuleCatches(t *testing.T) {
	t.Parallel()
	src := `package x

import "testing"

func TestParallel(t *testing.T) {
	t.Parallel()
}

// Serial: real time.
func TestSerial(t *testing.T) {}

func TestNeither(t *testing.T) {}

func TestOnlySubtests(t *testing.T) {
	t.Run("a", func(t *testing.T) { t.Parallel() })
}

// Serial:
func TestNoReason(t *testing.T) {}

// Serial: it says so.
func TestBoth(tt *testing.T) {
	tt.Parallel()
}

func TestSetenv(t *testing.T) {
	t.Parallel()
	t.Run("a", func(t *testing.T) { t.Setenv("A", "1") })
}

func TestMain(m *testing.M) {}

func Test(x int) {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	n, problems := parallelProblems(fset, f, "x_test.go")
	if n != 7 {
		t.Errorf("%d tests counted, want 7 (not TestMain, not Test(int))", n)
	}
	want := []string{
		"x_test.go:12:1: TestNeither neither calls t.Parallel()",
		"x_test.go:14:1: TestOnlySubtests neither calls t.Parallel()",
		`x_test.go:19:1: TestNoReason: its "Serial:" line gives no reason`,
		"x_test.go:22:1: TestBoth calls tt.Parallel() and says it is serial (it says so.)",
		"x_test.go:26:1: TestSetenv runs in parallel and calls t.Setenv",
	}
	if len(problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d: %s\nwant it to begin %s", i, problems[i], w)
		}
	}
}
