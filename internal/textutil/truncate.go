// Package textutil holds the one rune-safe truncation every package uses
// (annotator, evaluators, judge, the webhook exporter, evalctl), so that a
// cut never splits a UTF-8 sequence and the rule lives in one place.
package textutil

import (
	"fmt"
	"unicode/utf8"
)

// Truncate cuts s to at most max bytes without splitting a UTF-8 sequence;
// callers that mark the cut ("…", "[truncated: N more bytes]") compare the
// lengths. max <= 0 gives "".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Ellipsis is Truncate with "…" appended when something was cut (so the
// result may be up to len("…") bytes longer than max).
func Ellipsis(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return Truncate(s, max) + "…"
}

// Clip shortens s to at most n bytes on a rune boundary, saying how much was
// cut ("… [truncated: N more bytes]"): the bound judge prompts put on one
// field (max_field_bytes), which the session store keeps turns within too.
// n <= 0 keeps s whole.
func Clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	cut := Truncate(s, n)
	return fmt.Sprintf("%s… [truncated: %d more bytes]", cut, len(s)-len(cut))
}
