package evaluators

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

// tool_name_reliability and tool_description_reliability follow Dokimos'
// ToolNameReliabilityEvaluator and ToolDescriptionReliabilityEvaluator.
//
// Rule checks always run. With a judge (`judge:` naming a configured
// client) the judge checks run too, in ONE judge call per case that sends
// every tool definition of the case and asks for a boolean per tool per
// check:
//   - names: clarity, name_order, intent_over_implementation. As in Dokimos,
//     intent_over_implementation is one check that passes only when the
//     blocklist rule and the judge both pass it, so a tool has 5 checks.
//   - descriptions: the 9 checks of descriptionJudgeChecks, on top of the 4
//     rule checks, so a tool has 13 checks.
//
// Each tool scores the fraction of its checks that pass; the case scores the
// mean over its tools (Dokimos' formula: only checks that ran count).

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

const maxNameSegments = 7

var implementationWords = []string{"_with_llm", "_via_api", "_from_s3", "_using_bq", "_using_sdk", "_with_gpt4"}

// judgeCheck is one yes/no question the judge answers for every tool.
type judgeCheck struct{ key, question string }

var nameJudgeChecks = []judgeCheck{
	{"clarity", "the tool's high-level purpose is clear from the name alone, without reading the description; " +
		"the name avoids low-level identifiers, vague, obscure or ambiguous terms and redundant words."},
	{"name_order", "the words of the name follow the order operation, system, entity, data " +
		"(for example get_booking_property_name)."},
	{"intent_over_implementation", "the name says what the tool does, not how it does it: it names no output " +
		"format, input requirement or implementation detail (such as with_llm, via_api, from_s3)."},
}

var descriptionJudgeChecks = []judgeCheck{
	{"general_structure", "the description states the tool's purpose, its input arguments and what it returns."},
	{"has_examples", "the description gives examples of how to use the tool."},
	{"has_usage_notes", "the description has notes on how or when to use the tool (limitations, caveats)."},
	{"intent_over_implementation", "the description says what the tool does, not how it does it or other " +
		"implementation details."},
	{"clarity", "the description avoids obscure or ambiguous terms and low-level or very specific identifiers."},
	{"redundancy", "the description has no redundant information, nothing that does not help to understand what " +
		"the tool does, when to use it and how to call it."},
	{"input_arguments_enum", "arguments that take one of a fixed set of values list those values (true when no " +
		"argument needs it)."},
	{"input_arguments_format", "arguments that need a format (dates, ids, URLs …) state it (true when no " +
		"argument needs it)."},
	{"return_statement_quality", "the description makes clear what information the output contains."},
}

// reliabilityBase is shared by both types: the optional judge.
type reliabilityBase struct{ judgeBase }

// judged reports whether the judge checks run; when they do not although
// `judge` is set, note says why.
func (b reliabilityBase) judged() (ok bool, note string) {
	if b.judgeName == "" {
		return false, ""
	}
	if j, found := b.judges[b.judgeName]; !found || j == nil {
		return false, fmt.Sprintf("; judge %q is not configured, rule checks only", b.judgeName)
	}
	return true, ""
}

// toolTally is one tool's outcome.
type toolTally struct {
	name                     string
	checks, passed           int // what the score counts
	ruleChecks, rulePassed   int
	judgeChecks, judgePassed int
	fails                    []string
}

// judgeToolVerdict is one tool's verdicts: Checks[key] and, for a failed
// check, Reasons[key].
type judgeToolVerdict struct {
	Tool    num
	Checks  map[string]bool
	Reasons map[string]string
}

func (v judgeToolVerdict) index() num { return v.Tool }

// toolData is one tool definition as the judge sees it.
type toolData struct {
	Tool        int    `json:"tool"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  any    `json:"parameters,omitempty"`
}

// perToolLimit shares the field limit among many tools so the prompt stays
// bounded: each description / schema gets the whole limit up to 4 tools,
// then 4×limit / tools, at least 512 bytes.
func perToolLimit(limit, tools int) int {
	if tools <= 4 {
		return limit
	}
	return min(limit, max(512, 4*limit/tools))
}

func toolsData(defs []adapter.ToolDefinition, limit int, withParams bool) []toolData {
	per := perToolLimit(limit, len(defs))
	out := make([]toolData, 0, len(defs))
	for i, t := range defs {
		d := toolData{Tool: i + 1, Name: clipText(t.Name, 256), Description: clipText(t.Description, per)}
		if withParams && t.Parameters != nil {
			if b, err := json.Marshal(t.Parameters); err != nil || len(b) > per {
				d.Parameters = clipText(string(b), per)
			} else {
				d.Parameters = t.Parameters
			}
		}
		out = append(out, d)
	}
	return out
}

// askToolChecks makes the one judge call of a case and returns the verdicts
// by tool number (1-based). On failure it returns the result to report
// (skipped on budget, timeout, error; see judgeBase.ask).
func (b reliabilityBase) askToolChecks(ctx context.Context, what string, checks []judgeCheck, tools []toolData) (map[int]judgeToolVerdict, *Result) {
	var reply toolChecksReply
	if r := b.ask(ctx, toolChecksPrompt(what, checks), []field{{"tools", tools}}, &reply); r != nil {
		return nil, r
	}
	verdicts := make([]judgeToolVerdict, 0, len(reply.Tools))
	for _, raw := range reply.Tools {
		v, ok := decodeToolVerdict(raw, checks)
		if ok {
			verdicts = append(verdicts, v)
		}
	}
	byIdx, err := verdictsByIndex(verdicts, len(tools), "tool")
	if err != nil {
		r := Errored("%v", err)
		return nil, &r
	}
	for i := 1; i <= len(tools); i++ {
		for _, c := range checks {
			if _, ok := byIdx[i].Checks[c.key]; !ok {
				r := Errored("the judge gave no valid %s verdict for tool %d (%s)", c.key, i, truncate(tools[i-1].Name, 80))
				return nil, &r
			}
		}
	}
	return byIdx, nil
}

// decodeToolVerdict reads one tool's entry: "tool", then only the asked
// checks from "checks" (or, leniently, from the entry itself when the judge
// flattened it) and their reasons. A check whose value is not a yes/no is
// left out, so the caller reports it as missing.
func decodeToolVerdict(raw json.RawMessage, checks []judgeCheck) (judgeToolVerdict, bool) {
	var item map[string]json.RawMessage
	if err := json.Unmarshal(raw, &item); err != nil {
		return judgeToolVerdict{}, false
	}
	var v judgeToolVerdict
	if err := json.Unmarshal(item["tool"], &v.Tool); err != nil || !v.Tool.ok {
		return judgeToolVerdict{}, false
	}
	src := item
	if c, ok := item["checks"]; ok {
		src = nil
		_ = json.Unmarshal(c, &src)
	}
	var reasons map[string]json.RawMessage
	if r, ok := item["reasons"]; ok {
		_ = json.Unmarshal(r, &reasons)
	}
	v.Checks = make(map[string]bool, len(checks))
	for _, c := range checks {
		var f flag
		if val, ok := src[c.key]; ok && json.Unmarshal(val, &f) == nil && f.ok {
			v.Checks[c.key] = f.v
		}
		var s string
		if rv, ok := reasons[c.key]; ok && json.Unmarshal(rv, &s) == nil && strings.TrimSpace(s) != "" {
			if v.Reasons == nil {
				v.Reasons = map[string]string{}
			}
			v.Reasons[c.key] = strings.TrimSpace(s)
		}
	}
	return v, true
}

// judgeFail describes a check the judge failed.
func judgeFail(v judgeToolVerdict, key string) string {
	if r := v.Reasons[key]; r != "" {
		return fmt.Sprintf("%s (judge: %s)", key, truncate(r, 120))
	}
	return key + " (judge)"
}

// reliabilityResult totals the tools into the case's result.
// evaluateTools is the frame of both reliability evaluators: skipped
// without tool definitions; when the judge runs, one request asks checks
// about every tool (what: the part judged; withSchema: with its parameter
// schema); tally scores each tool from its rules and, when judged, its
// verdict.
func (b reliabilityBase) evaluateTools(ctx context.Context, c *adapter.Case, kind, what string, checks []judgeCheck, withSchema bool,
	tally func(t adapter.ToolDefinition, v judgeToolVerdict, judged bool) toolTally) Result {
	if len(c.ToolDefinitions) == 0 {
		return Skipped("no tool definitions on the spans")
	}
	judged, note := b.judged()
	var verdicts map[int]judgeToolVerdict
	if judged {
		var r *Result
		verdicts, r = b.askToolChecks(ctx, what, checks, toolsData(c.ToolDefinitions, b.limit(), withSchema))
		if r != nil {
			return *r
		}
	}
	tallies := make([]toolTally, 0, len(c.ToolDefinitions))
	for i, t := range c.ToolDefinitions {
		tallies = append(tallies, tally(t, verdicts[i+1], judged))
	}
	return reliabilityResult(kind, tallies, judged, note)
}

func reliabilityResult(kind string, tallies []toolTally, judged bool, note string) Result {
	total := 0.0
	var checks, passed, rc, rp, jc, jp int
	var fails []string
	for _, t := range tallies {
		total += float64(t.passed) / float64(t.checks)
		checks += t.checks
		passed += t.passed
		rc += t.ruleChecks
		rp += t.rulePassed
		jc += t.judgeChecks
		jp += t.judgePassed
		if len(t.fails) > 0 && len(fails) < 5 {
			fails = append(fails, fmt.Sprintf("%s: %s", truncate(t.name, 80), truncate(strings.Join(t.fails, "; "), 300)))
		}
	}
	n := len(tallies)
	reason := fmt.Sprintf("%d of %d %s checks passed across %s", passed, checks, kind, plural(n, "tool"))
	if judged {
		reason += fmt.Sprintf(" (rule %d/%d, judge %d/%d)", rp, rc, jp, jc)
	}
	if len(fails) > 0 {
		reason += "; " + strings.Join(fails, " | ")
	}
	metrics := map[string]float64{
		"tools": float64(n), "checks": float64(checks), "passed_checks": float64(passed),
		"rule_checks": float64(rc), "rule_checks_passed": float64(rp),
	}
	if judged {
		metrics["judge_checks"], metrics["judge_checks_passed"] = float64(jc), float64(jp)
	}
	return Scored(total/float64(n), clipText(reason+note, 1200), metrics)
}

type nameReliability struct{ reliabilityBase }

func newToolNameReliability(opts *confmap.Conf, deps Deps) (Evaluator, error) {
	var o struct{}
	if err := decodeOptions(opts, &o); err != nil {
		return nil, err
	}
	return &nameReliability{reliabilityBase{newJudgeBase(deps)}}, nil
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

func (e *nameReliability) Evaluate(ctx context.Context, c *adapter.Case) Result {
	return e.evaluateTools(ctx, c, "name", "name", nameJudgeChecks, false, func(t adapter.ToolDefinition, v judgeToolVerdict, judged bool) toolTally {
		tt := toolTally{name: t.Name, ruleChecks: 3}
		rule := func(ok bool, fail string) bool {
			if ok {
				tt.rulePassed++
			} else {
				tt.fails = append(tt.fails, fail)
			}
			return ok
		}
		snake := rule(snakeCase.MatchString(t.Name), "not snake_case")
		s := nameSegments(t.Name)
		concise := rule(s <= maxNameSegments, fmt.Sprintf("%d segments (at most %d)", s, maxNameSegments))
		lower := strings.ToLower(t.Name)
		word := ""
		for _, w := range implementationWords {
			if strings.Contains(lower, w) {
				word = w
				break
			}
		}
		intent := rule(word == "", fmt.Sprintf("names the implementation (%s)", word))
		results := []bool{snake, concise}
		if judged {
			for _, jc := range nameJudgeChecks {
				ok := v.Checks[jc.key]
				tt.judgeChecks++
				if ok {
					tt.judgePassed++
				} else {
					tt.fails = append(tt.fails, judgeFail(v, jc.key))
				}
				if jc.key == "intent_over_implementation" {
					// Dokimos: the blocklist and the judge must both pass it.
					intent = intent && ok
				} else {
					results = append(results, ok)
				}
			}
		}
		results = append(results, intent)
		tt.checks = len(results)
		for _, ok := range results {
			if ok {
				tt.passed++
			}
		}
		return tt
	})
}

type descriptionOptions struct {
	MaxInputArgs    int `mapstructure:"max_input_args"`
	MaxOptionalArgs int `mapstructure:"max_optional_args"`
}

type descriptionReliability struct {
	reliabilityBase
	o descriptionOptions
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
	return &descriptionReliability{reliabilityBase: reliabilityBase{newJudgeBase(deps)}, o: o}, nil
}

// descriptionRules runs the 4 rule checks on one tool.
func (e *descriptionReliability) descriptionRules(t adapter.ToolDefinition) toolTally {
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
	for i := range f {
		f[i] = truncate(f[i], 120)
	}
	return toolTally{name: t.Name, checks: 4, passed: 4 - len(f), ruleChecks: 4, rulePassed: 4 - len(f), fails: f}
}

func (e *descriptionReliability) Evaluate(ctx context.Context, c *adapter.Case) Result {
	return e.evaluateTools(ctx, c, "description", "description (with its parameter schema)", descriptionJudgeChecks, true, func(t adapter.ToolDefinition, v judgeToolVerdict, judged bool) toolTally {
		tt := e.descriptionRules(t)
		if judged {
			for _, jc := range descriptionJudgeChecks {
				tt.checks++
				tt.judgeChecks++
				if v.Checks[jc.key] {
					tt.passed++
					tt.judgePassed++
				} else {
					tt.fails = append(tt.fails, judgeFail(v, jc.key))
				}
			}
		}
		return tt
	})
}
