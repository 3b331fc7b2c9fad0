package textutil

import (
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is two bytes: never split
		{"héllo", 3, "hé"},
		{"日本語", 4, "日"},
		{"日本語", 0, ""},
		{"abc", -1, ""},
		{"", 0, ""},
	} {
		got := Truncate(tc.s, tc.max)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
	if got := Ellipsis("héllo", 2); got != "h…" {
		t.Errorf("Ellipsis = %q", got)
	}
	if got := Ellipsis("hé", 3); got != "hé" {
		t.Errorf("Ellipsis of a short string = %q", got)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"héllo", 2, "h… [truncated: 5 more bytes]"}, // é is two bytes: never split
		{"hello", 5, "hello"},
		{"hello", 0, "hello"}, // no bound
	} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
