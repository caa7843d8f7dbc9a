package doccheck_test

import (
	"bufio"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documents are tested like code: every relative link and anchor of every Markdown file
// resolves, and every Go code block is held, line for line, by Go code that compiles: an
// Example (which also runs) for the README and the guides in docs/.

// markdownFiles returns the Markdown files of the module, outside installed packages and
// hidden directories.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	return files
}

// mdDoc is what the tests read of a Markdown file.
type mdDoc struct {
	text    []string   // each line outside code blocks, inline code removed ("" inside blocks)
	raw     []string   // the same lines with their inline code
	goCode  [][]string // the Go code blocks
	goLines []int      // the line of each Go block's opening fence
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	fenceOpen  = regexp.MustCompile("^(`{3,}|~{3,})\\s*([^`\\s]*)")
)

func readMarkdown(t *testing.T, path string) mdDoc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var doc mdDoc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var block []string
	fence, lang, n := "", "", 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if m := fenceOpen.FindStringSubmatch(trimmed); m != nil {
				fence, lang, block = m[1], m[2], nil
				if lang == "go" {
					doc.goLines = append(doc.goLines, n)
				}
				doc.text, doc.raw = append(doc.text, ""), append(doc.raw, "")
				continue
			}
			doc.text, doc.raw = append(doc.text, inlineCode.ReplaceAllString(line, "")), append(doc.raw, line)
			continue
		}
		// A closing fence is the opening fence's character alone, at least as many times.
		if strings.Trim(trimmed, fence[:1]) == "" && len(trimmed) >= len(fence) {
			if lang == "go" {
				doc.goCode = append(doc.goCode, block)
			}
			fence = ""
		} else {
			block = append(block, line)
		}
		doc.text, doc.raw = append(doc.text, ""), append(doc.raw, "")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if fence != "" {
		t.Errorf("%s: a code block opened with %s is never closed", path, fence)
	}
	return doc
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkText  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
)

// anchorSlug is GitHub's anchor for a heading: the rendered text in lower case, characters
// other than letters, marks, digits, connector punctuation ('_'), '-' and ' ' dropped, and
// each space turned into '-'.
func anchorSlug(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	heading = htmlTag.ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings, with GitHub's -1, -2 suffixes for
// repeated ones, and its explicit HTML anchors.
func anchors(doc mdDoc) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range doc.raw {
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			s := anchorSlug(m[1])
			if k := seen[s]; k > 0 {
				out[s+"-"+strconv.Itoa(k)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

func TestAnchorSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The error model":                                                         "the-error-model",
		"Tasks: calls that outlast their request":                                 "tasks-calls-that-outlast-their-request",
		"Tool arguments in headers (`x-mcp-header`)":                              "tool-arguments-in-headers-x-mcp-header",
		"JWT access tokens from a real authorization server (`auth.JWTVerifier`)": "jwt-access-tokens-from-a-real-authorization-server-authjwtverifier",
		"Cluster: 1 vs 3 members, the cost of a hop":                              "cluster-1-vs-3-members-the-cost-of-a-hop",
		"Streamable HTTP & auth":                                                  "streamable-http--auth",
		"See [the guide](docs/x.md)":                                              "see-the-guide",
		"snake_case and Ünïcode":                                                  "snake_case-and-ünïcode",
	} {
		if got := anchorSlug(heading); got != want {
			t.Errorf("anchorSlug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestMarkdownLinks: every relative link of every Markdown file names a file or directory that
// exists, and every anchor one of the target's headings.
func TestMarkdownLinks(t *testing.T) {
	docs := map[string]mdDoc{}
	files := markdownFiles(t)
	for _, f := range files {
		docs[f] = readMarkdown(t, f)
	}
	checked := 0
	for _, f := range files {
		for i, line := range docs[f].text {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				switch {
				case strings.HasPrefix(path, "/"): // GitHub: relative to the repository's root
					dest = filepath.Clean(strings.TrimPrefix(path, "/"))
				case path != "":
					dest = filepath.Join(filepath.Dir(f), path)
				}
				if path != "" {
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %v", f, i+1, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				d, ok := docs[filepath.Clean(dest)]
				if !ok {
					t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", f, i+1, target)
					continue
				}
				if !anchors(d)[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", f, i+1, target, dest, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the test reads nothing")
	}
}

// srcLine is one non-blank line of Go source, trimmed.
type srcLine struct {
	text string
	kind lineKind
	// opener, for a line inside a multi-line string or block comment, is the index of the line
	// where that token starts; -1 otherwise.
	opener int
}

type lineKind int

const (
	codeLine    lineKind = iota // a token other than a comment starts the line
	commentLine                 // a comment starts the line
	insideLine                  // the line continues a multi-line string or block comment
)

// goSource is a Go file as the tests compare it with Markdown.
type goSource struct {
	path     string
	lines    []srcLine
	examples bool // the file declares an Example function
}

// readGoSource splits a Go file into its non-blank lines and tells code from comments and from
// the inside of multi-line strings and comments, so that a Markdown block is held only by code
// that compiles, never by text hidden in a comment or a string.
func readGoSource(t *testing.T, path string) goSource {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { t.Errorf("%s: %s", pos, msg) }, scanner.ScanComments)
	rawLines := strings.Split(string(src), "\n")
	first := make([]token.Token, len(rawLines)+1) // the first token starting on each line (1-based)
	inside := make([]int, len(rawLines)+1)        // for a continuation line, the line its token starts on
	examples := false
	prevIdent := token.ILLEGAL
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" { // inserted at a line's end, not written
			continue
		}
		if prevIdent == token.FUNC && tok == token.IDENT && strings.HasPrefix(lit, "Example") {
			examples = true
		}
		prevIdent = tok
		p := fset.Position(pos)
		if first[p.Line] == token.ILLEGAL {
			first[p.Line] = tok
		}
		if tok == token.STRING || tok == token.COMMENT {
			end := p.Line + strings.Count(lit, "\n")
			for l := p.Line + 1; l <= end; l++ {
				inside[l] = p.Line
			}
		}
	}
	gs := goSource{path: path, examples: examples}
	index := map[int]int{} // source line number -> index in gs.lines
	for n, raw := range rawLines {
		line := n + 1
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		l := srcLine{text: text, opener: -1}
		switch {
		case inside[line] != 0:
			l.kind = insideLine
			if i, ok := index[inside[line]]; ok {
				l.opener = i
			}
		case first[line] == token.COMMENT:
			l.kind = commentLine
		default:
			l.kind = codeLine
		}
		index[line] = len(gs.lines)
		gs.lines = append(gs.lines, l)
	}
	return gs
}

// compiledGoFiles returns the Go files of the module that its build compiles (every build
// constraint but "ignore" is taken to hold), split into test and non-test files.
func compiledGoFiles(t *testing.T) (tests, others []goSource, testedDirs map[string]bool) {
	t.Helper()
	testedDirs = map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || path == filepath.Join("internal", "doccheck", "markdown_test.go") {
			return nil
		}
		gs := readGoSource(t, path)
		for _, l := range gs.lines {
			if l.kind == codeLine { // build constraints come before the package clause
				break
			}
			if strings.HasPrefix(l.text, "//go:build") && strings.Contains(l.text, "ignore") {
				return nil
			}
		}
		if strings.HasSuffix(path, "_test.go") {
			tests = append(tests, gs)
			testedDirs[filepath.Dir(path)] = true
		} else {
			others = append(others, gs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tests, others, testedDirs
}

// normalizeGo returns the non-blank lines of a Markdown Go block, trimmed.
func normalizeGo(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// heldBy reports whether want appears as consecutive lines of src where it is code: a line of
// the block that is not a comment matches only a line of code, or a line that continues a
// multi-line string or comment begun inside the match; a comment line matches only a comment.
func heldBy(src goSource, want []string) bool {
next:
	for i := 0; i+len(want) <= len(src.lines); i++ {
		for j, w := range want {
			l := src.lines[i+j]
			if l.text != w {
				continue next
			}
			switch l.kind {
			case insideLine:
				if l.opener < i {
					continue next
				}
			case commentLine:
				if !strings.HasPrefix(w, "//") && !strings.HasPrefix(w, "/*") {
					continue next
				}
			}
		}
		return true
	}
	return false
}

// isProgram reports whether a block is a whole Go file: its first line that is not a comment
// is a package clause.
func isProgram(block []string) bool {
	for _, l := range block {
		if !strings.HasPrefix(l, "//") {
			return strings.HasPrefix(l, "package ")
		}
	}
	return false
}

// wholeFile reports whether want is exactly src's non-blank lines.
func wholeFile(src goSource, want []string) bool {
	if len(src.lines) != len(want) {
		return false
	}
	for i, l := range src.lines {
		if l.text != want[i] {
			return false
		}
	}
	return true
}

// TestMarkdownGoBlocksCompile: every Go code block of every Markdown file is held by Go code
// that compiles (ignoring indentation and blank lines). A block whose first line of code is a
// package clause is a whole file: it must be, line for line, a file of the module whose package has
// tests. Any other block must appear as consecutive lines of code in a _test.go file: for the
// README and the guides in docs/, a file that declares an Example, so that the snippet runs
// where `go test` runs examples.
func TestMarkdownGoBlocksCompile(t *testing.T) {
	tests, others, testedDirs := compiledGoFiles(t)
	blocks := 0
	for _, f := range markdownFiles(t) {
		doc := readMarkdown(t, f)
		guide := f == "README.md" || strings.HasPrefix(f, "docs"+string(filepath.Separator))
		for i, block := range doc.goCode {
			blocks++
			want := normalizeGo(block)
			if len(want) == 0 {
				t.Errorf("%s:%d: an empty Go block", f, doc.goLines[i])
				continue
			}
			held := ""
			if isProgram(want) {
				for _, src := range others {
					if wholeFile(src, want) && testedDirs[filepath.Dir(src.path)] {
						held = src.path
						break
					}
				}
				if held == "" {
					t.Errorf("%s:%d: this program is no file of the module, or its package has no test", f, doc.goLines[i])
				}
				continue
			}
			for _, src := range tests {
				if (!guide || src.examples) && heldBy(src, want) {
					held = src.path
					break
				}
			}
			if held == "" {
				where := "test"
				if guide {
					where = "file of Examples"
				}
				t.Errorf("%s:%d: this Go block is in no %s as code; copy it from one (first line: %s)", f, doc.goLines[i], where, want[0])
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go block found: the test reads nothing")
	}
}

// TestHeldBy: the matcher refuses text that is in a comment or a string rather than code.
func TestHeldBy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x_test.go")
	src := "package x\n\n// hidden()\nvar s = `\nhidden()\n`\n\n/*\nhidden()\n*/\n\nfunc ExampleX() {\n\t// a comment\n\tshown()\n\tq := `\n\tinside\n\t`\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	gs := readGoSource(t, path)
	if !gs.examples {
		t.Error("ExampleX not seen")
	}
	for _, c := range []struct {
		want []string
		held bool
	}{
		{[]string{"shown()"}, true},
		{[]string{"// a comment", "shown()"}, true},
		{[]string{"q := `", "inside", "`"}, true},
		{[]string{"hidden()"}, false},
		{[]string{"inside"}, false},
		{[]string{"a comment"}, false},
		{[]string{"// hidden()"}, true}, // a comment shown as a comment
	} {
		if got := heldBy(gs, c.want); got != c.held {
			t.Errorf("heldBy(%q) = %v, want %v", c.want, got, c.held)
		}
	}
}
