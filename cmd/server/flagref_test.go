package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/server.md's flag reference from the binary's flags")

const (
	flagRefDoc   = "../../docs/server.md"
	flagRefBegin = "<!-- The flag reference is generated from the binary's flags: go test ./cmd/server -run TestFlagReference -update -->"
	flagRefEnd   = "<!-- End of the generated flag reference. -->"
)

// flagSection is a part of the reference; a flag goes to the first section that takes it.
type flagSection struct {
	title string
	takes func(f *flag.Flag) bool
}

func named(names ...string) func(f *flag.Flag) bool {
	return func(f *flag.Flag) bool {
		for _, n := range names {
			if f.Name == n {
				return true
			}
		}
		return false
	}
}

func prefixed(p string) func(f *flag.Flag) bool {
	return func(f *flag.Flag) bool { return strings.HasPrefix(f.Name, p) }
}

var flagSections = []flagSection{
	{"Cluster", prefixed("cluster-")},
	{"Authentication", func(f *flag.Flag) bool {
		return strings.HasPrefix(f.Name, "auth-") || named("authorization-server", "resource", "tool-scope", "hide-forbidden-tools")(f)
	}},
	{"Visibility", named("tool-tag", "tag-scope", "disable-tag")},
	{"Tasks", func(f *flag.Flag) bool {
		return strings.HasPrefix(f.Name, "task-") || strings.HasPrefix(f.Name, "max-tasks")
	}},
	{"Streamable HTTP", func(f *flag.Flag) bool { return strings.HasPrefix(f.Usage, "HTTP") }},
	{"Limits", named("max-message-size", "max-calls-per-connection", "max-calls", "max-client-declaration", "tool-timeout",
		"handler-grace", "end-of-input-grace", "output-grace", "shutdown-grace")},
	{"Observability", named("log-level", "diagnostics-file", "admin-addr", "pprof")},
	{"General", func(*flag.Flag) bool { return true }},
}

// zeroDefault reports whether a flag's default is its type's zero value, which --help leaves
// out and so does the reference (the usage says what zero means).
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return true
	}
	return false
}

// flagReference renders the flags as Markdown: one table per section, each flag with its
// argument, its usage and its default, as --help prints them.
func flagReference(fs *flag.FlagSet) string {
	bySection := make([][]*flag.Flag, len(flagSections))
	fs.VisitAll(func(f *flag.Flag) {
		for i, s := range flagSections {
			if s.takes(f) {
				bySection[i] = append(bySection[i], f)
				return
			}
		}
	})
	cell := strings.NewReplacer("|", `\|`)
	var b strings.Builder
	b.WriteString(flagRefBegin + "\n")
	order := []string{"General", "Limits", "Observability", "Streamable HTTP", "Authentication", "Visibility", "Tasks", "Cluster"}
	for _, title := range order {
		var flags []*flag.Flag
		for i, s := range flagSections {
			if s.title == title {
				flags = bySection[i]
			}
		}
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n| flag | meaning |\n| --- | --- |\n", title)
		for _, f := range flags {
			arg, usage := flag.UnquoteUsage(f)
			if arg == "value" { // a flag.Value whose usage names no argument
				arg = ""
			}
			name := "`--" + f.Name
			if arg != "" {
				name += " " + arg
			}
			name += "`"
			if !zeroDefault(f) {
				usage += fmt.Sprintf(" (default `%s`)", f.DefValue)
			}
			fmt.Fprintf(&b, "| %s | %s |\n", cell.Replace(name), cell.Replace(usage))
		}
	}
	b.WriteString("\n" + flagRefEnd)
	return b.String()
}

// TestFlagReference: the flag reference in docs/server.md is the binary's flags, name for name,
// with their arguments, usage and defaults; -update rewrites it.
func TestFlagReference(t *testing.T) {
	fs := newFlagSet(&options{}, io.Discard)
	want := flagReference(fs)
	doc, err := os.ReadFile(flagRefDoc)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(doc, []byte(flagRefBegin)), bytes.Index(doc, []byte(flagRefEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no generated flag reference between %q and %q", flagRefDoc, flagRefBegin, flagRefEnd)
	}
	got := string(doc[begin : end+len(flagRefEnd)])
	if got == want {
		return
	}
	if *updateDocs {
		out := append(append(append([]byte{}, doc[:begin]...), want...), doc[end+len(flagRefEnd):]...)
		if err := os.WriteFile(flagRefDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s's flag reference differs from the binary's flags (go test ./cmd/server -run TestFlagReference -update rewrites it); first difference, line %d:\n doc:   %s\n flags: %s", flagRefDoc, i+1, g, w)
		}
	}
}

// TestReadmeFlags: every flag the README's table of the binary's flags names is a flag of the
// binary.
func TestReadmeFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := newFlagSet(&options{}, io.Discard)
	flagName := regexp.MustCompile("`--([a-z0-9-]+)")
	n := 0
	for i, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range flagName.FindAllStringSubmatch(first, -1) {
			n++
			if fs.Lookup(m[1]) == nil {
				t.Errorf("README.md:%d: --%s is not a flag of the server binary", i+1, m[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("README.md has no table of the binary's flags")
	}
}
