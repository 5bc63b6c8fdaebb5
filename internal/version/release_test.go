package version

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agent-trace-witness/witness/internal/testrepo"
)

// releaseConfig is the part of .goreleaser.yaml the repository uses. It is
// decoded strictly: a member not named here (a typo, or an option added
// without a look at this test) fails the test, since goreleaser check is
// not run here (docs/design/release.md). Add new options here as well.
type releaseConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID           string   `yaml:"id"`
		Main         string   `yaml:"main"`
		Binary       string   `yaml:"binary"`
		Env          []string `yaml:"env"`
		GOOS         []string `yaml:"goos"`
		GOARCH       []string `yaml:"goarch"`
		Flags        []string `yaml:"flags"`
		Ldflags      []string `yaml:"ldflags"`
		ModTimestamp string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		ID              string   `yaml:"id"`
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			GOOS    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Snapshot struct {
		VersionTemplate string `yaml:"version_template"`
	} `yaml:"snapshot"`
	Changelog struct {
		Sort string `yaml:"sort"`
	} `yaml:"changelog"`
}

// The release config cannot rot silently: it builds ./cmd/witness without
// cgo for the systems `make cross` checks, on amd64 and arm64; it sets the
// same -X variables as `make build`, in this package, and each is a string
// variable here; its archives hold files that exist, zip on Windows, with
// a sha256 checksum file.
func TestReleaseConfig(t *testing.T) {
	root := testrepo.Root(t)
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg releaseConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if cfg.Version != 2 {
		t.Errorf("version: %d, want 2 (goreleaser v2)", cfg.Version)
	}
	if len(cfg.Builds) != 1 {
		t.Fatalf("%d builds, want 1 (witness)", len(cfg.Builds))
	}
	b := cfg.Builds[0]
	if b.Main != "./cmd/witness" || b.Binary != "witness" {
		t.Errorf("build: main %q binary %q, want ./cmd/witness and witness", b.Main, b.Binary)
	}
	if !isMainPackage(t, filepath.Join(root, b.Main)) {
		t.Errorf("build main %s is not a main package", b.Main)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0", b.Env)
	}
	mk := makefile(t, root)
	if got, want := sorted(b.GOOS), sorted(strings.Fields(mk.crossGOOS)); !slices.Equal(got, want) {
		t.Errorf("goos %v, Makefile CROSS_GOOS %v", got, want)
	}
	if got, want := sorted(b.GOARCH), mk.crossGOARCH; !slices.Equal(got, want) {
		t.Errorf("goarch %v, Makefile cross %v", got, want)
	}
	if got := sorted(b.GOARCH); !slices.Equal(got, []string{"amd64", "arm64"}) {
		t.Errorf("goarch %v, want amd64 and arm64", got)
	}
	checkLdflags(t, root, strings.Join(b.Ldflags, " "), mk)
	checkArchives(t, root, cfg, b.ID)
	if cfg.Checksum.Algorithm != "sha256" || cfg.Checksum.NameTemplate == "" {
		t.Errorf("checksum %+v: want a sha256 file", cfg.Checksum)
	}
}

// checkLdflags holds the release's -X flags to the Makefile's and to this
// package: the same package, the same variable names, each a string
// variable declared here.
func checkLdflags(t *testing.T, root, ldflags string, mk makeVars) {
	t.Helper()
	rel := xVars(ldflags)
	if len(rel) == 0 {
		t.Fatalf("ldflags %q set no -X variables", ldflags)
	}
	pkg := modulePath(t, root) + "/internal/version"
	if mk.versionPkg != pkg {
		t.Errorf("Makefile VERSION_PKG %q, this package is %q", mk.versionPkg, pkg)
	}
	vars := stringVars(t, filepath.Join(root, "internal", "version"))
	var names []string
	for p, ns := range rel {
		if p != pkg {
			t.Errorf("release ldflags set -X %s.*, not in %s", p, pkg)
		}
		for _, n := range ns {
			if !vars[n] {
				t.Errorf("release ldflags set %s.%s: no such string variable in internal/version", p, n)
			}
		}
		names = append(names, ns...)
	}
	made := xVars(strings.ReplaceAll(mk.ldflags, "$(VERSION_PKG)", mk.versionPkg))
	if got, want := sorted(names), sorted(made[mk.versionPkg]); !slices.Equal(got, want) {
		t.Errorf("release ldflags set %v, the Makefile's LDFLAGS %v", got, want)
	}
	if !slices.Equal(sorted(names), []string{"Commit", "Date", "Version"}) {
		t.Errorf("release ldflags set %v, want Commit, Date and Version", names)
	}
}

// checkArchives: one archive of the build, tar.gz with zip on Windows,
// and every file it names exists.
func checkArchives(t *testing.T, root string, cfg releaseConfig, build string) {
	t.Helper()
	if len(cfg.Archives) != 1 {
		t.Fatalf("%d archives, want 1", len(cfg.Archives))
	}
	ar := cfg.Archives[0]
	if !slices.Equal(ar.IDs, []string{build}) || !slices.Equal(ar.Formats, []string{"tar.gz"}) {
		t.Errorf("archive ids %v formats %v: want [%s] and [tar.gz]", ar.IDs, ar.Formats, build)
	}
	if len(ar.FormatOverrides) != 1 || ar.FormatOverrides[0].GOOS != "windows" || !slices.Equal(ar.FormatOverrides[0].Formats, []string{"zip"}) {
		t.Errorf("archive format_overrides %+v: want zip on windows", ar.FormatOverrides)
	}
	for _, f := range ar.Files {
		m, err := filepath.Glob(filepath.Join(root, f))
		if err != nil || len(m) == 0 {
			t.Errorf("archive file %s: nothing matches (%v)", f, err)
		}
	}
}

// makeVars are what the Makefile says about builds.
type makeVars struct {
	versionPkg  string   // VERSION_PKG
	ldflags     string   // LDFLAGS, unexpanded
	crossGOOS   string   // CROSS_GOOS
	crossGOARCH []string // the GOARCH values of the cross target, sorted
}

func makefile(t *testing.T, root string) makeVars {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	assign := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s*[:?]?=\s*(.*)$`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("Makefile: no %s", name)
		}
		return strings.TrimSpace(string(m[1]))
	}
	mv := makeVars{versionPkg: assign("VERSION_PKG"), ldflags: assign("LDFLAGS"), crossGOOS: assign("CROSS_GOOS")}
	i := bytes.Index(data, []byte("\ncross:"))
	if i < 0 {
		t.Fatal("Makefile: no cross target")
	}
	recipe := data[i+1:]
	if j := bytes.Index(recipe, []byte("\n\n")); j >= 0 {
		recipe = recipe[:j]
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`GOARCH=(\w+) \$\(GO\) build`).FindAllSubmatch(recipe, -1) {
		seen[string(m[1])] = true
	}
	for a := range seen {
		mv.crossGOARCH = append(mv.crossGOARCH, a)
	}
	sort.Strings(mv.crossGOARCH)
	return mv
}

// xVars returns the variables of the -X flags in ldflags by package.
func xVars(ldflags string) map[string][]string {
	out := map[string][]string{}
	for _, m := range regexp.MustCompile(`-X\s+(\S+)\.(\w+)=`).FindAllStringSubmatch(ldflags, -1) {
		out[m[1]] = append(out[m[1]], m[2])
	}
	return out
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod: no module line")
	}
	return string(m[1])
}

// stringVars returns the package-level variables of the package in dir
// that -X can set: declared with a string literal or as a string.
func stringVars(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range parseDir(t, dir, 0) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				isString := false
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
					isString = true
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						isString = true
					}
				}
				for _, n := range vs.Names {
					out[n.Name] = isString
				}
			}
		}
	}
	return out
}

func isMainPackage(t *testing.T, dir string) bool {
	files := parseDir(t, dir, parser.PackageClauseOnly)
	return len(files) > 0 && files[0].Name.Name == "main"
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string, mode parser.Mode) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}
