// Package redact masks personal data and secrets in the text evalbridge
// sends out of the collector or writes back (docs/contract.md §20,
// docs/redaction.md): judge prompts, remote evaluator bodies, webhook
// payloads, reasons and explanations. It never touches the evaluated spans.
package redact

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Built-in detector names (docs/contract.md §20).
const (
	Email      = "email"
	Phone      = "phone"
	CreditCard = "credit_card"
	IBAN       = "iban"
	IPAddress  = "ip_address"
	Secret     = "secret"
)

// DefaultReplacement is `replacement` when not set.
const DefaultReplacement = "[REDACTED:{name}]"

// Builtins lists the built-in detectors, in the order they claim text when
// two would match the same characters (a card number is not also a phone
// number; a key inside an e-mail-like string is a secret).
func Builtins() []string {
	return []string{Secret, Email, CreditCard, IBAN, IPAddress, Phone}
}

// Pattern is one user pattern: an RE2 regular expression and the name its
// placeholders carry.
type Pattern struct {
	Name  string `mapstructure:"name"`
	Regex string `mapstructure:"regex"`
}

// Config is the `redaction:` block of the eval processor, evalctl and the
// webhook exporter.
type Config struct {
	// Detectors are the built-ins to run; the default is all of them and
	// `[]` turns them off.
	Detectors []string `mapstructure:"detectors"`
	// Patterns are the user's own, run after the built-ins.
	Patterns []Pattern `mapstructure:"patterns"`
	// Replacement is the placeholder template: `{name}` is the detector or
	// pattern name followed by `#<n>`, n numbering the distinct values of
	// that name within one text (one prompt, one body); with `{n}` in the
	// template, `{name}` is the bare name and `{n}` the number.
	Replacement string `mapstructure:"replacement"`

	_ struct{}
}

// NewDefaultConfig returns every built-in detector and the default
// replacement.
func NewDefaultConfig() Config {
	return Config{Detectors: Builtins(), Replacement: DefaultReplacement}
}

var nameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// Validate names what is wrong: an unknown detector, a pattern without a
// name or with a regex that does not compile (naming the pattern).
func (c *Config) Validate() error {
	var errs []error
	known := map[string]bool{}
	for _, b := range Builtins() {
		known[b] = true
	}
	seen := map[string]bool{}
	for i, d := range c.Detectors {
		switch {
		case !known[d]:
			errs = append(errs, fmt.Errorf("detectors[%d]: %q is not a built-in detector (built-ins: %s)", i, d, strings.Join(Builtins(), ", ")))
		case seen[d]:
			errs = append(errs, fmt.Errorf("detectors[%d]: %q is listed twice", i, d))
		}
		seen[d] = true
	}
	for i, p := range c.Patterns {
		where := fmt.Sprintf("patterns[%d]", i)
		if p.Name != "" {
			where += fmt.Sprintf(" (%s)", p.Name)
		}
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("%s: name is required", where))
		case !nameRE.MatchString(p.Name):
			errs = append(errs, fmt.Errorf("%s: name %q must match [a-z0-9_]+", where, p.Name))
		case known[p.Name]:
			errs = append(errs, fmt.Errorf("%s: name %q is a built-in detector's; list it under detectors instead", where, p.Name))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", where, p.Name))
		}
		seen[p.Name] = true
		if p.Regex == "" {
			errs = append(errs, fmt.Errorf("%s: regex is required", where))
			continue
		}
		re, err := regexp.Compile(p.Regex)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: regex %q is not valid RE2: %w", where, p.Regex, err))
			continue
		}
		if re.MatchString("") {
			errs = append(errs, fmt.Errorf("%s: regex %q matches the empty string", where, p.Regex))
		}
	}
	if c.Replacement == "" {
		errs = append(errs, errors.New("replacement must not be empty (default \"[REDACTED:{name}]\")"))
	}
	return errors.Join(errs...)
}

// Enabled says some detector or pattern is configured.
func (c *Config) Enabled() bool { return len(c.Detectors)+len(c.Patterns) > 0 }
