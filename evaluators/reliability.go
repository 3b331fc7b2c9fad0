package evaluators

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// Rule checks from Dokimos' ToolNameReliabilityEvaluator and
// ToolDescriptionReliabilityEvaluator. Each tool scores the fraction of
// checks it passes; the case scores the mean over its tools. The judge
// checks (clarity, name_order, … and the 9 description checks) come later;
// with `judge` set the rule checks still run alone and the reason says so.

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

const maxNameSegments = 7

var implementationWords = []string{"_with_llm", "_via_api", "_from_s3", "_using_bq", "_using_sdk", "_with_gpt4"}

const judgeNotYet = "; judge checks are not run yet, rule checks only"

type nameReliability struct{ judge string }

func newToolNameReliability(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o struct{}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	return &nameReliability{judge: deps.Judge}, nil
}

// nameSegments counts underscore-separated segments as Java's
// String.split("_") does (trailing empty segments dropped).
func nameSegments(name string) int {
	parts := strings.Split(name, "_")
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts)
}

func (e *nameReliability) Evaluate(_ context.Context, c *adapter.Case) Result {
	if len(c.ToolDefinitions) == 0 {
		return Skipped("no tool definitions on the spans")
	}
	total := 0.0
	passedChecks, checks := 0, 0
	var fails []string
	for _, t := range c.ToolDefinitions {
		var f []string
		if !snakeCase.MatchString(t.Name) {
			f = append(f, "not snake_case")
		}
		if s := nameSegments(t.Name); s > maxNameSegments {
			f = append(f, fmt.Sprintf("%d segments (at most %d)", s, maxNameSegments))
		}
		lower := strings.ToLower(t.Name)
		for _, w := range implementationWords {
			if strings.Contains(lower, w) {
				f = append(f, fmt.Sprintf("names the implementation (%s)", w))
				break
			}
		}
		ok := 3 - len(f)
		total += float64(ok) / 3
		passedChecks += ok
		checks += 3
		if len(f) > 0 && len(fails) < 5 {
			fails = append(fails, fmt.Sprintf("%s: %s", t.Name, strings.Join(f, ", ")))
		}
	}
	n := len(c.ToolDefinitions)
	reason := fmt.Sprintf("%d of %d name checks passed across %s", passedChecks, checks, plural(n, "tool"))
	if len(fails) > 0 {
		reason += "; " + strings.Join(fails, "; ")
	}
	if e.judge != "" {
		reason += judgeNotYet
	}
	return Scored(total/float64(n), reason, map[string]float64{"tools": float64(n), "checks": float64(checks), "passed_checks": float64(passedChecks)})
}

type descriptionOptions struct {
	MaxInputArgs    int `mapstructure:"max_input_args"`
	MaxOptionalArgs int `mapstructure:"max_optional_args"`
}

type descriptionReliability struct {
	o     descriptionOptions
	judge string
}

func newToolDescriptionReliability(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	o := descriptionOptions{MaxInputArgs: 5, MaxOptionalArgs: 3}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	if o.MaxInputArgs < 0 {
		return nil, fmt.Errorf("option `max_input_args`: %d must be >= 0", o.MaxInputArgs)
	}
	if o.MaxOptionalArgs < 0 {
		return nil, fmt.Errorf("option `max_optional_args`: %d must be >= 0", o.MaxOptionalArgs)
	}
	return &descriptionReliability{o: o, judge: deps.Judge}, nil
}

func (e *descriptionReliability) Evaluate(_ context.Context, c *adapter.Case) Result {
	if len(c.ToolDefinitions) == 0 {
		return Skipped("no tool definitions on the spans")
	}
	total := 0.0
	passedChecks, checks := 0, 0
	var fails []string
	for _, t := range c.ToolDefinitions {
		props, _ := t.Parameters["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		var undescribed, untyped []string
		for _, k := range names {
			ps, _ := props[k].(map[string]any)
			if _, ok := ps["description"]; !ok {
				undescribed = append(undescribed, k)
			}
			if _, ok := ps["type"]; !ok {
				untyped = append(untyped, k)
			}
		}
		required := map[string]bool{}
		if req, ok := t.Parameters["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
		} else if req, ok := t.Parameters["required"].([]string); ok {
			for _, s := range req {
				required[s] = true
			}
		}
		optional := 0
		for _, k := range names {
			if !required[k] {
				optional++
			}
		}
		var f []string
		if len(undescribed) > 0 {
			f = append(f, "arguments without description: "+strings.Join(undescribed, ", "))
		}
		if len(untyped) > 0 {
			f = append(f, "arguments without type: "+strings.Join(untyped, ", "))
		}
		if len(names) > e.o.MaxInputArgs {
			f = append(f, fmt.Sprintf("%d arguments (at most %d)", len(names), e.o.MaxInputArgs))
		}
		if optional > e.o.MaxOptionalArgs {
			f = append(f, fmt.Sprintf("%d optional arguments (at most %d)", optional, e.o.MaxOptionalArgs))
		}
		ok := 4 - len(f)
		total += float64(ok) / 4
		passedChecks += ok
		checks += 4
		if len(f) > 0 && len(fails) < 5 {
			fails = append(fails, fmt.Sprintf("%s: %s", t.Name, truncate(strings.Join(f, "; "), 200)))
		}
	}
	n := len(c.ToolDefinitions)
	reason := fmt.Sprintf("%d of %d description checks passed across %s", passedChecks, checks, plural(n, "tool"))
	if len(fails) > 0 {
		reason += "; " + strings.Join(fails, " | ")
	}
	if e.judge != "" {
		reason += judgeNotYet
	}
	return Scored(total/float64(n), reason, map[string]float64{"tools": float64(n), "checks": float64(checks), "passed_checks": float64(passedChecks)})
}
