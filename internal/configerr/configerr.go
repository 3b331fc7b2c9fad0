// Package configerr turns the decoder's messages about a config into ones
// that speak the user's YAML: `unknown key "evaluatorz"` with the file and
// line, not `'engine.Config' has invalid keys: evaluatorz`.
package configerr

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// invalidKeys matches mapstructure's report of keys no field takes:
// `'sessions' has invalid keys: idel, max_turnz`; the path is a Go type
// name ('engine.Config') for the top level.
var invalidKeys = regexp.MustCompile(`'([^']*)' has invalid keys: ([^\n]*)`)

// UnknownKey is a key of the config that no option takes.
type UnknownKey struct {
	Path []string // from the top of the config block, e.g. [sessions idel]
	Line int      // 1-based; 0 when the YAML is not at hand
	File string
}

func (u UnknownKey) Error() string {
	where := ""
	switch {
	case u.File != "" && u.Line > 0:
		where = fmt.Sprintf("%s:%d: ", u.File, u.Line)
	case u.File != "":
		where = u.File + ": "
	}
	return fmt.Sprintf("%sunknown key %q", where, strings.Join(u.Path, "."))
}

// Unknown returns the unknown keys that err, from decoding into target,
// reports; nil when it reports none.
func Unknown(err error, target any) []UnknownKey {
	if err == nil {
		return nil
	}
	top := strings.TrimPrefix(fmt.Sprintf("%T", target), "*") // the decoder's name for the top level
	var out []UnknownKey
	for _, m := range invalidKeys.FindAllStringSubmatch(err.Error(), -1) {
		var prefix []string
		if p := m[1]; p != "" && p != top {
			prefix = splitPath(p)
		}
		for _, k := range strings.Split(m[2], ",") {
			if k = strings.TrimSpace(k); k != "" {
				out = append(out, UnknownKey{Path: append(append([]string{}, prefix...), k)})
			}
		}
	}
	return out
}

// splitPath turns mapstructure's `judges[default].retry` into its keys.
func splitPath(p string) []string {
	p = strings.NewReplacer("[", ".", "]", "").Replace(p)
	var keys []string
	for _, k := range strings.Split(p, ".") {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// Rewrite replaces an error from decoding into target that reports unknown
// keys with one that names them as the user wrote them; other errors are
// returned as they are. file and raw (the file's YAML, whose top level is
// the config block) add the file and line when given.
func Rewrite(err error, target any, file string, raw []byte) error {
	unknown := Unknown(err, target)
	if len(unknown) == 0 {
		return err
	}
	var root yaml.Node
	haveYAML := raw != nil && yaml.Unmarshal(raw, &root) == nil
	errs := make([]error, 0, len(unknown))
	for _, u := range unknown {
		u.File = file
		if haveYAML {
			u.Line = Line(&root, u.Path)
		}
		errs = append(errs, u)
	}
	return errors.Join(errs...)
}

// Line is the 1-based line of the key at path in a YAML document (0 when it
// is not there). A list index in the path ("evaluators.0.x") is followed.
func Line(doc *yaml.Node, path []string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range path {
		switch n.Kind {
		case yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscanf(key, "%d", &idx); err != nil || idx < 0 || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// Syntax checks that raw is YAML and, when it is not, says on which line.
// The parser names the line where the broken collection began (an
// indentation error three lines into a list is reported at the list's
// line), so the line is the first one after which the file stops parsing
// with the same problem.
func Syntax(file string, raw []byte) error {
	var root yaml.Node
	err := yaml.Unmarshal(raw, &root)
	if err == nil {
		return nil
	}
	problem := problemText(err)
	line := 0
	lines := strings.SplitAfter(string(raw), "\n")
	for n := 1; n <= len(lines); n++ {
		var prefix yaml.Node
		if perr := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &prefix); perr != nil && problemText(perr) == problem {
			line = n
			break
		}
	}
	if line == 0 {
		return fmt.Errorf("%s: not valid YAML: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return fmt.Errorf("%s:%d: not valid YAML: %s", file, line, problem)
}

// problemText is a YAML error without its "yaml: line N:" prefix.
var yamlLine = regexp.MustCompile(`^yaml: (line \d+: )?`)

func problemText(err error) string { return yamlLine.ReplaceAllString(err.Error(), "") }
