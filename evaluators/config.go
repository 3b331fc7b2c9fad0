package evaluators

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/judge"
)

// Config is one entry of `evaluators:` (docs/contract.md §5). Common keys are
// fields; everything else is the type's own options, decoded strictly by the
// type so that an unknown option is an error naming the evaluator.
type Config struct {
	Type       string        `mapstructure:"type"`
	Name       string        `mapstructure:"name"`
	Threshold  *float64      `mapstructure:"threshold"`
	Case       adapter.Level `mapstructure:"case"`
	When       []string      `mapstructure:"when"`
	SampleRate *float64      `mapstructure:"sample_rate"`
	Judge      string        `mapstructure:"judge"`
	// RunIf is a CEL condition over the results of the evaluators defined
	// earlier that ran on the same case, and the case (runif.go); false:
	// the instance is skipped with the reason "run_if".
	RunIf string `mapstructure:"run_if"`
	// MaxToolCalls bounds the tool calls, and the expected tool calls, of a
	// case that an evaluator of tool calls compares (default
	// defaultMaxToolCalls): above it the evaluation is `skipped`, so one
	// hostile trace cannot hold a worker. Only for the types that read the
	// calls (factory.ToolCalls).
	MaxToolCalls *int `mapstructure:"max_tool_calls"`
	// Version names what the evaluator means (docs/contract.md §24); empty:
	// a hash of its effective behaviour (version.go).
	Version string `mapstructure:"version"`
	// Examples is a JSONL file of worked examples put into a judge
	// evaluator's prompts (examples.go); only with `judge`.
	Examples string `mapstructure:"examples"`
	// Options are the type-specific keys.
	Options map[string]any `mapstructure:",remain"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9_]+$`)

// reservedNames are the instance names whose eval.<name>.* keys would share
// a namespace with a key the processor writes or reads for itself (docs/contract.md
// §16; the keys are listed in docs/evaluators.md). A name cannot hold a
// dot, so only the first segment after `eval.` can collide. Each entry says
// which key it would collide with, for the validation error.
var reservedNames = map[string]string{
	"failed":            "eval.failed (the names that failed on a span)",
	"expected":          "eval.expected.* (the expectations read from the span)",
	"tasks":             "eval.tasks (an expectation read from the span)",
	"constraints":       "eval.constraints (an expectation read from the span)",
	"conversation_goal": "eval.conversation_goal (an expectation read from the span)",
	"context":           "eval.context (an expectation read from the span)",
	"session":           "eval.session.* (written on evaluate_session spans)",
	"late":              "eval.late (written on spans scored after their trace was released)",
	"target":            "eval.target.span_name (written with late results)",
	"generated":         "eval.generated (marks the spans evalbridge creates)",
}

// ReservedNames lists the instance names that validation rejects, sorted.
func ReservedNames() []string { return sortedKeys(reservedNames) }

// InstanceName is the configured name, or the type when none is given.
func (c *Config) InstanceName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Type
}

// Validate checks the common keys and decodes the type's options, so that a
// bad option is reported at config time, not on the first span.
func (c *Config) Validate() error {
	if c.Type == "" {
		return errors.New("evaluator: `type` is required")
	}
	f, ok := lookup(c.Type)
	if !ok {
		return fmt.Errorf("evaluator %q: unknown type %q (known: %v)", c.InstanceName(), c.Type, Types())
	}
	name := c.InstanceName()
	if !namePattern.MatchString(name) {
		return fmt.Errorf("evaluator %q: name must match [a-z0-9_]+", name)
	}
	if key, ok := reservedNames[name]; ok {
		return fmt.Errorf("evaluator %q: name is reserved: its results eval.%s.* would collide with %s; give the instance another `name`",
			name, name, key)
	}
	// Written as !(in range) so that NaN (YAML `.nan`) is out of range too.
	if c.Threshold != nil && !(*c.Threshold >= 0 && *c.Threshold <= 1) {
		return fmt.Errorf("evaluator %q: threshold %v must be within [0, 1]", name, *c.Threshold)
	}
	switch c.Case {
	case "", adapter.LevelLLM, adapter.LevelAgent:
	case adapter.LevelSession:
		if !f.Sessions {
			return fmt.Errorf("evaluator %q: type %s cannot score sessions (case: session); session-capable types: %s",
				name, c.Type, strings.Join(sessionTypes(), ", "))
		}
	default:
		return fmt.Errorf("evaluator %q: case %q must be llm, agent or session", name, c.Case)
	}
	if c.SampleRate != nil && !(*c.SampleRate >= 0 && *c.SampleRate <= 1) {
		return fmt.Errorf("evaluator %q: sample_rate %v must be within [0, 1]", name, *c.SampleRate)
	}
	if c.MaxToolCalls != nil {
		if !f.ToolCalls {
			return fmt.Errorf("evaluator %q: max_tool_calls applies only to the evaluators of tool calls (%s), not to %s",
				name, strings.Join(toolCallTypes(), ", "), c.Type)
		}
		if *c.MaxToolCalls <= 0 {
			return fmt.Errorf("evaluator %q: max_tool_calls %d must be positive", name, *c.MaxToolCalls)
		}
	}
	if strings.TrimSpace(c.RunIf) != "" {
		if _, err := compileRunIf(c.RunIf); err != nil {
			return fmt.Errorf("evaluator %q: %w", name, err)
		}
	}
	if f.NeedsJudge && c.Judge == "" {
		return fmt.Errorf("evaluator %q: type %s needs `judge`", name, c.Type)
	}
	if err := validateVersion(c.Version); err != nil {
		return fmt.Errorf("evaluator %q: %w", name, err)
	}
	if c.Examples != "" {
		if c.Judge == "" {
			return fmt.Errorf("evaluator %q: examples are shown to a judge: set `judge` (type %s asks none without it)", name, c.Type)
		}
		if _, err := LoadExamples(c.Examples); err != nil {
			return fmt.Errorf("evaluator %q: %w", name, err)
		}
	}
	if _, err := f.New(c.optionsConf(), Deps{Judge: c.Judge, Name: name}); err != nil {
		return fmt.Errorf("evaluator %q (%s): %w", name, c.Type, err)
	}
	return nil
}

func (c *Config) optionsConf() *confmap.Conf {
	return confmap.NewFromStringMap(c.Options)
}

// ValidateAll checks every entry and that names are unique.
func ValidateAll(cfgs []Config) error {
	var errs []error
	for i := range cfgs {
		if err := cfgs[i].Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, UniqueNames(cfgs), ValidateRunIf(cfgs))...)
}

// UniqueNames checks what only the whole list can tell: that no two
// instances share a name (results are written under eval.<name>.*).
func UniqueNames(cfgs []Config) error {
	seen := make(map[string]bool, len(cfgs))
	var errs []error
	for i := range cfgs {
		name := cfgs[i].InstanceName()
		if seen[name] {
			errs = append(errs, fmt.Errorf("evaluator %q: name is used twice; give each instance its own `name`", name))
		}
		seen[name] = true
	}
	return errors.Join(errs...)
}

// Instance is a configured evaluator: its type's Evaluator plus the common
// settings that decide where it runs and when it passes.
type Instance struct {
	Name       string
	Type       string
	Threshold  float64
	Level      adapter.Level
	When       []string
	SampleRate float64
	Judge      string
	// RunIf is the compiled run_if, nil when the instance always runs.
	RunIf *RunIf
	// ConversationFree, Async and NeedsAttributes are the type's factory's.
	ConversationFree bool
	// MaxToolCalls is the cap on a case's calls and expected calls; 0 when
	// the type does not read tool calls.
	MaxToolCalls    int
	Async           bool
	NeedsAttributes bool
	Evaluator       Evaluator
	// Version and EvaluatorType are the provenance every result carries
	// (docs/contract.md §24): `version`, else a hash of the instance's
	// effective behaviour (version.go); deterministic, llm_judge, cel or
	// remote.
	Version       string
	EvaluatorType string
}

// defaultMaxToolCalls is max_tool_calls when not set: far above what an
// agent run makes, far below what would let one trace hold a worker.
const defaultMaxToolCalls = 1000

func toolCallTypes() []string { return typesWhere(func(f factory) bool { return f.ToolCalls }) }

// Build turns validated configs into instances.
func Build(cfgs []Config, deps Deps) ([]*Instance, error) {
	out := make([]*Instance, 0, len(cfgs))
	var err error
	for i := range cfgs {
		c := &cfgs[i]
		f, ok := lookup(c.Type)
		if !ok {
			return nil, fmt.Errorf("evaluator %q: unknown type %q", c.InstanceName(), c.Type)
		}
		d := deps
		d.Judge, d.Name, d.Examples = c.Judge, c.InstanceName(), nil
		if c.Examples != "" {
			if d.Examples, err = LoadExamples(c.Examples); err != nil {
				return nil, fmt.Errorf("evaluator %q: %w", c.InstanceName(), err)
			}
		}
		ev, err := f.New(c.optionsConf(), d)
		if err != nil {
			return nil, fmt.Errorf("evaluator %q (%s): %w", c.InstanceName(), c.Type, err)
		}
		inst := &Instance{
			Name: c.InstanceName(), Type: c.Type,
			Threshold: f.DefaultThreshold, Level: f.DefaultLevel,
			When: c.When, SampleRate: 1, Judge: c.Judge, Evaluator: ev,
			ConversationFree: f.ConversationFree, Async: f.Async, NeedsAttributes: f.NeedsAttributes,
		}
		// An evaluator may know better than its type what it reads (a CEL
		// expression that reads only tool calls).
		if ev, ok := ev.(interface{ ConversationFree() bool }); ok {
			inst.ConversationFree = ev.ConversationFree()
		}
		if ev, ok := ev.(interface{ NeedsAttributes() bool }); ok {
			inst.NeedsAttributes = ev.NeedsAttributes()
		}
		if strings.TrimSpace(c.RunIf) != "" {
			if inst.RunIf, err = compileRunIf(c.RunIf); err != nil {
				return nil, fmt.Errorf("evaluator %q: %w", c.InstanceName(), err)
			}
			// What run_if reads of `case` must be decoded too.
			inst.ConversationFree = inst.ConversationFree && inst.RunIf.conversationFree()
			inst.NeedsAttributes = inst.NeedsAttributes || inst.RunIf.needsAttributes()
		}
		if c.Threshold != nil {
			inst.Threshold = *c.Threshold
		}
		if c.Case != "" {
			inst.Level = c.Case
		}
		if c.SampleRate != nil {
			inst.SampleRate = *c.SampleRate
		}
		if f.ToolCalls {
			inst.MaxToolCalls = defaultMaxToolCalls
			if c.MaxToolCalls != nil {
				inst.MaxToolCalls = *c.MaxToolCalls
			}
		}
		inst.EvaluatorType = evaluatorType(f, c)
		if inst.Version = c.Version; inst.Version == "" {
			inst.Version = behaviourVersion(f, c, inst, d)
		}
		out = append(out, inst)
	}
	return out, nil
}

// Background says the engine runs the instance off the scoring path, as
// judge work: it has a judge, or its type waits on an endpoint.
func (in *Instance) Background() bool { return in.Judge != "" || in.Async }

// Evaluate runs the instance on a case and decides passed or failed.
func (in *Instance) Evaluate(ctx context.Context, c *adapter.Case) (r Result) {
	defer func() {
		// An evaluator bug must not take the collector down: report it.
		if p := recover(); p != nil {
			r = in.Stamp(Errored("evaluator panicked: %v", p))
		}
	}()
	if r, over := in.overCap(c); over {
		return in.Stamp(r)
	}
	// Judge calls made for this instance are costed to it (only an
	// instance with a judge makes any: the others' contexts stay as they
	// are, one allocation less per evaluation).
	if in.Judge != "" {
		ctx = judge.WithEvaluator(ctx, in.Name)
	}
	r = in.Stamp(in.Evaluator.Evaluate(ctx, c))
	if r.Scored() {
		if r.Score >= in.Threshold {
			r.Status = StatusPassed
		} else {
			r.Status = StatusFailed
		}
	}
	return r
}

// Stamp is r as the instance's: its name, type, threshold and provenance.
// Every result of the instance, whoever makes it (a timeout, a skip by
// run_if), is stamped, so none goes out without its version.
func (in *Instance) Stamp(r Result) Result {
	r.Name, r.Type, r.Threshold = in.Name, in.Type, in.Threshold
	r.Version, r.EvaluatorType = in.Version, in.EvaluatorType
	return r
}

// overCap skips a case with more calls, or expected calls, than
// max_tool_calls: comparing them is at least linear and, for some modes,
// quadratic in the counts.
func (in *Instance) overCap(c *adapter.Case) (Result, bool) {
	if in.MaxToolCalls <= 0 {
		return Result{}, false
	}
	if n := len(c.ToolCalls); n > in.MaxToolCalls {
		return Skipped("the case has %d tool calls, more than max_tool_calls (%d); not evaluated", n, in.MaxToolCalls), true
	}
	if n := len(c.Expected.ToolCalls); c.Expected.HasToolCalls && n > in.MaxToolCalls {
		return Skipped("the case expects %d tool calls (eval.expected.tool_calls), more than max_tool_calls (%d); not evaluated",
			n, in.MaxToolCalls), true
	}
	return Result{}, false
}
