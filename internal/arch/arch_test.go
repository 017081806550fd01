package arch

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tokperf/tokperf/"

// imports are the direct imports of every package under internal/ and
// cmd/, production files only, by package name relative to the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	for _, top := range []string{"internal", "cmd"} {
		filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() == "testdata" {
				return nil
			}
			p, err := build.ImportDir(path, 0)
			if err != nil {
				return nil // no Go files here
			}
			rel, _ := filepath.Rel(root, path)
			out[filepath.ToSlash(rel)] = p.Imports
			return nil
		})
	}
	if len(out) < 10 {
		t.Fatalf("found only %d packages: is the test run from its own directory?", len(out))
	}
	return out
}

// path is the import chain from pkg to a package for which bad is true,
// nil when there is none.
func path(all map[string][]string, pkg string, bad func(string) bool) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, imp := range all[p] {
			name := strings.TrimPrefix(imp, module)
			if bad(name) {
				return []string{p, name}
			}
			if _, ours := all[name]; ours {
				if chain := walk(name); chain != nil {
					return append([]string{p}, chain...)
				}
			}
		}
		return nil
	}
	return walk(pkg)
}

func one(names ...string) func(string) bool {
	return func(s string) bool { return slices.Contains(names, s) }
}

// The arrows of docs/ARCHITECTURE.md.
func TestImports(t *testing.T) {
	t.Parallel()
	all := imports(t)
	network := one("net", "net/http", "net/http/httptrace", "os/exec", "golang.org/x/net/http2")
	client := one("internal/backend", "internal/runner", "internal/bench", "internal/cli", "internal/report", "internal/analyze",
		"internal/summary", "internal/telemetry", "internal/results", "internal/workload", "internal/schedule")
	for _, rule := range []struct {
		pkg        string
		transitive bool
		bad        func(string) bool
		why        string
	}{
		{"internal/cli", false, one("net", "net/http", "internal/summary", "internal/backend", "internal/runner", "internal/telemetry"),
			"cli parses flags, calls bench and renders: it touches no network and computes no figure"},
		{"internal/report", true, network, "report renders models: it never touches the network"},
		{"internal/report", true, one("internal/bench", "internal/backend", "internal/runner", "internal/sim", "internal/results"), "report renders models, it does not run or read"},
		{"internal/analyze", true, network, "analyze is pure: models and judgements over numbers"},
		{"internal/summary", true, network, "summary is pure: records to figures"},
		{"internal/results", true, one("internal/telemetry"), "results stores samples as record types"},
		{"internal/foreign", true, network, "foreign reads other tools' files: it never touches the network"},
		{"internal/foreign", false, one("internal/results", "internal/bench", "internal/report", "internal/telemetry"), "foreign maps files onto analyze's model, nothing else"},
		{"internal/record", false, func(s string) bool { return strings.HasPrefix(s, "internal/") }, "record is the vocabulary: it imports nothing of tokperf"},
		{"internal/sim", true, client, "the simulator imports nothing of the client: it is an independent server"},
		{"internal/twin", false, one("internal/backend", "internal/runner", "internal/results", "internal/telemetry", "internal/bench"), "the twin replays in virtual time: no client, no files"},
		{"internal/shard", false, one("internal/bench", "internal/backend", "internal/telemetry", "internal/report"), "shard splits, gates and merges a run: it sends no load and renders nothing"},
		{"internal/runner", false, one("internal/backend", "internal/summary", "internal/results"), "runner knows only record, schedule and the interfaces it declares"},
		{"internal/engine", false, func(s string) bool { return strings.HasPrefix(s, "internal/") }, "the engine table is data"},
		{"internal/stability", false, func(s string) bool { return strings.HasPrefix(s, "internal/") && s != "internal/stats" }, "stability judges series of numbers: it imports only stats"},
		{"internal/stability", true, network, "stability is pure"},
		{"internal/k8s", false, func(s string) bool { return strings.HasPrefix(s, "internal/") }, "k8s writes manifests from its own config: it imports nothing of tokperf"},
		{"internal/k8s", true, network, "k8s writes text: it never talks to a cluster"},
	} {
		if _, ok := all[rule.pkg]; !ok {
			t.Errorf("%s: no such package (update this test and docs/ARCHITECTURE.md together)", rule.pkg)
			continue
		}
		var chain []string
		if rule.transitive {
			chain = path(all, rule.pkg, rule.bad)
		} else {
			for _, imp := range all[rule.pkg] {
				if name := strings.TrimPrefix(imp, module); rule.bad(name) {
					chain = []string{rule.pkg, name}
				}
			}
		}
		if chain != nil {
			t.Errorf("%s: %s (%s)", rule.pkg, strings.Join(chain, " → "), rule.why)
		}
	}
}

// Every package under internal/ is named in docs/ARCHITECTURE.md, and every
// package the document names exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range imports(t) {
		if strings.HasPrefix(pkg, "internal/") && !strings.Contains(string(doc), pkg+"/") {
			t.Errorf("docs/ARCHITECTURE.md does not name %s/", pkg)
		}
	}
}

// The checker finds a chain where there is one: cli reaches the network
// through bench, never directly.
func TestPathFindsChains(t *testing.T) {
	t.Parallel()
	all := imports(t)
	chain := path(all, "internal/cli", one("net/http"))
	if len(chain) < 3 || chain[0] != "internal/cli" || chain[len(chain)-1] != "net/http" {
		t.Errorf("cli → … → net/http: got %v", chain)
	}
	if chain := path(all, "internal/stats", one("net/http")); chain != nil {
		t.Errorf("stats reaches the network: %v", chain)
	}
}

// Functions stay short enough to read whole: none of internal/cli is over
// 60 lines (the command line is a thin shell; the run logic lives in bench
// and analyze, tested there), none of any other package over 80 (a long
// function is a sign that its decisions want names), but for those of
// tooLong, which may only shrink.
func TestFunctionsAreShort(t *testing.T) {
	t.Parallel()
	var found []function
	for pkg := range imports(t) {
		long, _ := longFunctions(t, filepath.Join("..", "..", pkg), limit(pkg))
		found = append(found, long...)
	}
	for _, p := range lengthProblems(found, tooLong) {
		t.Error(p)
	}
}

// limit is the most lines a function of pkg may have.
func limit(pkg string) int {
	if pkg == "internal/cli" {
		return 60
	}
	return 80
}

// tooLong are the functions over 80 lines when the rule came to every
// package, by package and name, with their lengths then. An entry may only
// shrink: a listed function that grows fails, and so does one that is gone
// or back within the limit and still listed (delete its line). Give a
// function's decisions names of their own to take it off the list.
var tooLong = map[string]int{
	"internal/analyze Experiment.representative": 85,
	"internal/analyze Fairness":                  97,
	"internal/backend Detect":                    107,
	"internal/backend fastChunk":                 96,
	"internal/backend openAI.read":               99,
	"internal/experiment File.fill":              102,
	"internal/foreign aiperfRun":                 86,
	"internal/foreign flatSummary":               82,
	"internal/foreign guidellmStage":             96,
	"internal/foreign vllmRequests":              83,
	"internal/report ExperimentText":             108,
	"internal/report chart.layout":               142,
	"internal/report stageCharts":                94,
	"internal/sim Profile.fill":                  154,
	"internal/stats DescribeEach":                90,
	"internal/summary Acc.Add":                   115,
	"internal/tokenizer bpe.mergeHeap":           81,
	"internal/tokenizer parseHF":                 109,
	"internal/workload fitIDs":                   88,
}

// lengthProblems are the functions of found (each over its package's
// limit) that allowed does not let be, and allowed's entries that name no
// function of found.
func lengthProblems(found []function, allowed map[string]int) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range found {
		key := f.pkg + " " + f.name
		seen[key] = true
		switch was, ok := allowed[key]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s is %d lines (over %d): give its decisions names, small functions or types of their own", f.pos, key, f.lines, limit(f.pkg)))
		case f.lines > was:
			out = append(out, fmt.Sprintf("%s: %s grew from %d to %d lines: it is listed as too long, and may only shrink", f.pos, key, was, f.lines))
		}
	}
	for key := range allowed {
		if !seen[key] {
			out = append(out, fmt.Sprintf("%s is gone or within its limit: delete its line from tooLong, so that it cannot grow back", key))
		}
	}
	slices.Sort(out)
	return out
}

// Each way a function can break the rule is found, and only those: a new
// long function, a listed one that grew, a listed one now short or gone;
// a listed one that shrank but is still long passes.
func TestLengthProblems(t *testing.T) {
	t.Parallel()
	found := []function{
		{pkg: "internal/a", name: "New", lines: 81},
		{pkg: "internal/a", name: "T.grew", lines: 91},
		{pkg: "internal/b", name: "shrank", lines: 85},
		{pkg: "internal/b", name: "same", lines: 85},
	}
	allowed := map[string]int{"internal/a T.grew": 90, "internal/b shrank": 99, "internal/b same": 85, "internal/b short": 82}
	got := strings.Join(lengthProblems(found, allowed), "\n")
	for _, want := range []string{"internal/a New is 81 lines (over 80)", "internal/a T.grew grew from 90 to 91", "internal/b short is gone"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 3 || strings.Contains(got, "shrank") || strings.Contains(got, "same") {
		t.Errorf("%d problems, want 3 (none for shrank or same):\n%s", n, got)
	}
}

// function is one function declaration and its length in lines.
type function struct {
	pos   token.Position
	pkg   string // relative to the module, as internal/sim
	name  string // with its receiver's type, as Server.serve
	lines int
}

// longFunctions are the functions of dir's non-test files over limit
// lines, from the func keyword (or the receiver's) to the closing brace,
// and how many functions there are in all; dir is a package's directory
// below the module's root, whose path names the functions' package.
func longFunctions(t *testing.T, dir string, limit int) (long []function, n int) {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; lines > limit {
				long = append(long, function{fset.Position(fn.Pos()), pkgOf(dir), funcName(fn), lines})
			}
		}
	}
	return long, n
}

// pkgOf is the package in dir relative to the module's root (the tests
// run in internal/arch): internal/sim for ../../internal/sim; a directory
// outside the module is named by its path.
func pkgOf(dir string) string {
	rel, err := filepath.Rel(filepath.Join("..", ".."), dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(rel)
}

// funcName is fn's name, after its receiver's type where it has one:
// Server.serve for func (s *Server) serve, Set.Add for func (s *Set[T]) Add.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch g := t.(type) {
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// The length check finds a long function where there is one, and only
// there: in a file of a 12-line function (a method) and an 81-line one,
// with a limit of 80, it names the 81-line one at the line it starts.
func TestLongFunctionsFindsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package p\n\ntype T struct{}\n\nfunc (T) short() {\n")
	for range 10 {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n\n// long is long.\n")
	at := strings.Count(b.String(), "\n") + 1
	b.WriteString("func long() {\n")
	for range 79 {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	long, n := longFunctions(t, dir, 80)
	if n != 2 || len(long) != 1 || long[0].name != "long" || long[0].pkg != pkgOf(dir) || long[0].lines != 81 || long[0].pos.Line != at {
		t.Errorf("%d functions, over 80 lines: %+v; want 2, and long at line %d of 81 lines", n, long, at)
	}
	if long, _ := longFunctions(t, dir, 81); len(long) != 0 {
		t.Errorf("with a limit of 81: %+v, want none", long)
	}
}
