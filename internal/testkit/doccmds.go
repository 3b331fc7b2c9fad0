package testkit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// DocCommand is one documented invocation of a program: the file it is in,
// its subcommand and the flags it passes (without dashes).
type DocCommand struct {
	File, Line string
	Sub        string
	Flags      []string
}

// DocCommands returns every invocation of prog ("evalctl",
// "evalbridge-loadgen") in the fenced code blocks of root's README.md and
// docs/*.md: a line that runs it (`prog sub …`, `go run ./cmd/prog sub …`,
// `$ prog …`), joined with its `\` continuations, up to a `#` comment, a
// pipe or a redirection.
func DocCommands(t testing.TB, root, prog string) []DocCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	start := regexp.MustCompile(`^(?:\$ )?(?:go run \./cmd/|\./|bin/)?` + regexp.QuoteMeta(prog) + `\s+([a-z][a-z-]*)(.*)$`)
	flagRE := regexp.MustCompile(`(?:^|\s)--?([a-z][a-z0-9-]*)`)
	var cmds []DocCommand
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(raw), "\n")
		inBlock := false
		for i := 0; i < len(lines); i++ {
			line := strings.TrimSpace(lines[i])
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
				continue
			}
			if !inBlock {
				continue
			}
			m := start.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			rest := m[2]
			for strings.HasSuffix(rest, `\`) && i+1 < len(lines) {
				i++
				rest = strings.TrimSuffix(rest, `\`) + " " + strings.TrimSpace(lines[i])
			}
			if k := strings.IndexAny(rest, "#|>"); k >= 0 {
				rest = rest[:k]
			}
			c := DocCommand{File: filepath.Base(f), Line: strings.TrimSpace(line), Sub: m[1]}
			for _, fm := range flagRE.FindAllStringSubmatch(rest, -1) {
				c.Flags = append(c.Flags, fm[1])
			}
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// CheckDocCommandFlags checks every documented invocation of prog
// (DocCommands; at least `least` of them): its subcommand
// exists and it passes only flags the subcommand takes. help returns what
// `prog sub -h` prints and whether that is the help of a subcommand.
func CheckDocCommandFlags(t testing.TB, root, prog string, least int, help func(sub string) (string, bool)) {
	t.Helper()
	cmds := DocCommands(t, root, prog)
	if len(cmds) < least {
		t.Fatalf("found %d documented %s commands; the docs show more (is the extraction broken?)", len(cmds), prog)
	}
	type subHelp struct {
		text string
		ok   bool
	}
	helps := map[string]subHelp{}
	for _, c := range cmds {
		h, seen := helps[c.Sub]
		if !seen {
			h.text, h.ok = help(c.Sub)
			helps[c.Sub] = h
		}
		if !h.ok {
			t.Errorf("%s: %q: %s has no subcommand %q (-h printed %q)", c.File, c.Line, prog, c.Sub, h.text)
			continue
		}
		for _, f := range c.Flags {
			if f == "h" || f == "help" {
				continue
			}
			if !strings.Contains(h.text, "  -"+f+" ") && !strings.Contains(h.text, "  -"+f+"\n") {
				t.Errorf("%s: %q: %s %s has no flag -%s", c.File, c.Line, prog, c.Sub, f)
			}
		}
	}
}
