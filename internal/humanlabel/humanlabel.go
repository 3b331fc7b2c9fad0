// Package humanlabel is how a human result's score label is read
// (docs/contract.md §25): through a mapping of labels to pass and fail,
// compared trimmed and case-insensitively, so the same labels give the same
// verdicts in evalmetrics' agreement join, the webhook exporter's outcomes
// and evalctl calibrate (an SDK's "Thumbs_Up" is thumbs_up everywhere).
package humanlabel

import "strings"

// The default mapping (§25).
var (
	DefaultPass = []string{"pass", "thumbs_up", "good"}
	DefaultFail = []string{"fail", "thumbs_down", "bad"}
)

// Norm is label as a mapping compares it.
func Norm(label string) string { return strings.ToLower(strings.TrimSpace(label)) }

// Mapping is a compiled mapping: each normalised label and whether it
// means pass.
type Mapping map[string]bool

// NewMapping compiles pass and fail (a label on both sides is fail; the
// configs' Validate refuses that, see Overlap).
func NewMapping(pass, fail []string) Mapping {
	m := make(Mapping, len(pass)+len(fail))
	for _, l := range pass {
		m[Norm(l)] = true
	}
	for _, l := range fail {
		m[Norm(l)] = false
	}
	return m
}

// Default is the default mapping, compiled.
func Default() Mapping { return NewMapping(DefaultPass, DefaultFail) }

// Verdict is what label means: pass or fail; ok is false for a label the
// mapping does not know.
func (m Mapping) Verdict(label string) (pass, ok bool) {
	pass, ok = m[Norm(label)]
	return pass, ok
}

// Overlap is the fail labels that are pass labels too, and whether any
// label is blank, as a mapping compares them.
func Overlap(pass, fail []string) (both []string, blank bool) {
	in := make(map[string]bool, len(pass))
	for _, l := range pass {
		in[Norm(l)] = true
		blank = blank || Norm(l) == ""
	}
	for _, l := range fail {
		if in[Norm(l)] {
			both = append(both, l)
		}
		blank = blank || Norm(l) == ""
	}
	return both, blank
}
