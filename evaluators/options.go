package evaluators

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/textutil"
)

// decodeOptions decodes a type's options strictly into out (a pointer to a
// struct with mapstructure tags). An unknown key becomes an error naming the
// option and listing the known ones.
func decodeOptions(opts *confmap.Conf, out any) error {
	if opts == nil {
		return nil
	}
	known := optionNames(reflect.TypeOf(out).Elem())
	var unknown []string
	for _, k := range opts.AllKeys() {
		top := k
		if i := strings.Index(k, confmap.KeyDelimiter); i >= 0 {
			top = k[:i]
		}
		if !containsString(known, top) && !containsString(unknown, top) {
			unknown = append(unknown, top)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		// The keys every entry takes are decoded before the type's options:
		// a misspelt one (treshold) lands here, so they are listed too.
		common := strings.Join(commonOptions(), ", ")
		if len(known) == 0 {
			return fmt.Errorf("unknown option %s (this type has no options of its own; every evaluator takes: %s)", quoteList(unknown), common)
		}
		return fmt.Errorf("unknown option %s (known options: %s; every evaluator also takes: %s)", quoteList(unknown), strings.Join(known, ", "), common)
	}
	if err := opts.Unmarshal(out); err != nil {
		return fmt.Errorf("bad option value: %s", cleanDecodeError(err))
	}
	return nil
}

// commonOptions lists the keys of an `evaluators:` entry that are not its
// type's options (Config's fields but `type`), sorted.
func commonOptions() []string {
	names := optionNames(reflect.TypeOf(Config{}))
	names = slices.DeleteFunc(names, func(n string) bool { return n == "type" })
	sort.Strings(names)
	return names
}

// optionNames lists the top-level mapstructure names of a struct type,
// following squashed embedded structs.
func optionNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		name, rest, _ := strings.Cut(tag, ",")
		if strings.Contains(rest, "squash") && f.Type.Kind() == reflect.Struct {
			out = append(out, optionNames(f.Type)...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

var decodeNoise = regexp.MustCompile(`decoding failed due to the following error\(s\):\s*`)

func cleanDecodeError(err error) string {
	s := decodeNoise.ReplaceAllString(err.Error(), "")
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.TrimSpace(s)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

// compileOptionRegex compiles a regex option, naming it in the error.
func compileOptionRegex(option, pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("option `%s`: invalid regular expression %q: %v", option, pattern, err)
	}
	return re, nil
}

// decodeWithExpected decodes an evaluator's options O and parses the
// expectation their `expected` option configures (has: one is configured).
func decodeWithExpected[T any, O interface{ parse() (T, bool, error) }](opts *confmap.Conf) (o O, cfg T, has bool, err error) {
	if err = decodeOptions(opts, &o); err != nil {
		return o, cfg, false, err
	}
	cfg, has, err = o.parse()
	return o, cfg, has, err
}

// expectedOrAlias is the value of option `expected` or of alias, another
// name of the same option: at most one of them may be given. nil: neither.
func expectedOrAlias(expected, alias any, aliasName string) (any, error) {
	if expected == nil {
		return alias, nil
	}
	if alias != nil {
		return nil, fmt.Errorf("options `expected` and `%s` are the same: give one", aliasName)
	}
	return expected, nil
}

// expectedOption is the `expected:` option shared by the tool-call
// comparison evaluators. Absent (nil) means no expectation from config.
type expectedOption struct {
	Expected any `mapstructure:"expected"`
}

// parse decodes the option with adapter.ParseExpectedCalls, so the config
// and the span attribute `eval.expected.tool_calls` mean the same thing.
func (e expectedOption) parse() (calls []adapter.ExpectedCall, ok bool, err error) {
	if e.Expected == nil {
		return nil, false, nil
	}
	calls, err = adapter.ParseExpectedCalls(e.Expected)
	if err != nil {
		return nil, false, fmt.Errorf("option `expected`: %w", err)
	}
	return calls, true, nil
}

// expectedCallsSpelling is the `expected` option that decodes to calls, in
// one of its spellings (a list of {name} and {name, arguments} objects),
// for the version (version.go); nil when none is configured.
func expectedCallsSpelling(calls []adapter.ExpectedCall, has bool) any {
	if !has {
		return nil
	}
	out := make([]any, len(calls))
	for i, c := range calls {
		m := map[string]any{"name": c.Name}
		if c.HasArguments {
			m["arguments"] = c.Arguments
			if c.Arguments == nil {
				m["arguments"] = map[string]any{}
			}
		}
		out[i] = m
	}
	return out
}

// expectation picks the case's expected tool calls, else the configured ones.
func expectation(c *adapter.Case, cfg []adapter.ExpectedCall, hasCfg bool) ([]adapter.ExpectedCall, string, bool) {
	if c.Expected.HasToolCalls {
		return c.Expected.ToolCalls, adapter.AttrExpectedToolCalls, true
	}
	if hasCfg {
		return cfg, "the evaluator's `expected` option", true
	}
	return nil, "", false
}

const noExpectation = "no expected tool calls: set the span attribute " + adapter.AttrExpectedToolCalls + " or the evaluator's `expected` option"

// plural returns "1 call" / "2 calls".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// tally counts the items a reason is about that pass and names the first
// max that do not, for the reason ("3 of 5 tasks completed; not completed:
// …").
type tally struct {
	passed int
	max    int
	named  []string
}

// add counts one item; name gives a failing item's name while fewer than
// max are named.
func (t *tally) add(ok bool, name func() string) {
	if ok {
		t.passed++
	} else if len(t.named) < t.max {
		t.named = append(t.named, name())
	}
}

// note is "; <label>: " and the named items joined by sep, or "" when none
// is named.
func (t *tally) note(label, sep string) string {
	if len(t.named) == 0 {
		return ""
	}
	return "; " + label + ": " + strings.Join(t.named, sep)
}

// withReason is s with the judge's reason for it in parentheses, if any.
func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + " (" + clipText(reason, 120) + ")"
}

// truncate shortens s to at most n bytes (on a rune boundary) with an ellipsis.
func truncate(s string, n int) string { return textutil.Ellipsis(s, n) }
