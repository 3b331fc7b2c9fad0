package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// findEmails finds local@domain.tld around each '@': the local part (at
// most 64 bytes: letters of any script, digits, . _ + - ') to the left,
// the domain (at most 253 bytes, dotted labels, a last label of 2-24
// letters that is not a file extension) to the right. Each scan stops at
// the next '@', so a run of them costs one look at each byte.
func findEmails(text, _ string, out []span) []span {
	floor := 0 // the end of the last address: the next starts after it
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], '@')
		if k < 0 {
			break
		}
		at := i + k
		i = at + 1
		l := at
		for l > floor && at-l <= 64 {
			c := text[l-1]
			if c < utf8.RuneSelf {
				if !isAlnum(c) && strings.IndexByte("._+-'", c) < 0 {
					break
				}
				l--
				continue
			}
			r, size := utf8.DecodeLastRuneInString(text[:l])
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Mn, r) {
				break
			}
			if l < at && text[l] < utf8.RuneSelf && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai) {
				break // CJK text runs into a Latin address without a space: メールtanaka@…
			}
			l -= size
		}
		if at-l > 64 {
			continue // a longer run: not an address's local part
		}
		for l < at && strings.IndexByte("._+-'", text[l]) >= 0 {
			l++
		}
		if l == at {
			continue
		}
		e, ok := emailDomain(text, at+1)
		if !ok {
			continue
		}
		out = append(out, span{l, e})
		i, floor = e, e
	}
	return out
}

// emailDomain reads the domain at text[i:]: its end, and whether it is
// one.
func emailDomain(text string, i int) (int, bool) {
	e := i
	for e < len(text) && e-i <= 253 && (isAlnum(text[e]) || text[e] == '-' || text[e] == '.') {
		e++
	}
	if e-i > 253 {
		return 0, false
	}
	for e > i && (text[e-1] == '.' || text[e-1] == '-') {
		e--
	}
	d := text[i:e]
	dot := strings.LastIndexByte(d, '.')
	if dot <= 0 {
		return 0, false // user@localhost
	}
	tld := d[dot+1:]
	if len(tld) < 2 || len(tld) > 24 || fileExtensions[strings.ToLower(tld)] {
		return 0, false
	}
	for j := 0; j < len(tld); j++ {
		if !isLetter(tld[j]) {
			return 0, false // pkg@1.2.3
		}
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' || len(label) > 63 {
			return 0, false
		}
	}
	return e, true
}

// fileExtensions are endings of file names with an '@' (logo@2x.png,
// icon@3x.webp) that are not top-level domains.
var fileExtensions = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "ico": true, "bmp": true,
	"css": true, "js": true, "mjs": true, "json": true, "map": true, "txt": true, "html": true, "htm": true,
	"xml": true, "yaml": true, "yml": true, "toml": true, "lock": true, "gz": true, "tgz": true, "whl": true,
	"jar": true, "tsx": true, "jsx": true, "java": true, "kt": true, "swift": true, "go": true,
}
