package redact

import "strings"

// findSecrets finds API-key-shaped tokens, JWTs, PEM private keys and the
// values of `Bearer …`. A token starts where the byte before is not a
// letter or digit: after a space, any punctuation or a label
// (`key=sk-…`, `api_key_sk-…`, `"AKIA…"`).
func findSecrets(text, _ string, out []span) []span {
	var pem pemIndex
	for i := 0; i < len(text); {
		c := text[i]
		if !secretFirst[c] || (i > 0 && isAlnum(text[i-1])) {
			i++
			continue
		}
		s, e, next := secretAt(text, i, &pem)
		if e > s {
			out = append(out, span{s, e})
			i = e
			continue
		}
		i = max(next, i+1)
	}
	return out
}

// secretFirst are the bytes a secret shape starts with.
var secretFirst = func() (a [256]bool) {
	for _, c := range "BbesSprAgGxa-" {
		a[c] = true
	}
	return a
}()

// tokenEnd is the end of the run of bytes in set from i.
func tokenEnd(text string, i int, set *[256]bool) int {
	for i < len(text) && set[text[i]] {
		i++
	}
	return i
}

func byteSet(ranges ...string) *[256]bool {
	var a [256]bool
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for c := int(r[0]); c <= int(r[2]); c++ {
				a[c] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			a[r[i]] = true
		}
	}
	return &a
}

var (
	alnumSet  = byteSet("a-z", "A-Z", "0-9")
	keySet    = byteSet("a-z", "A-Z", "0-9", "_-")     // sk-…, glpat-…, AIza…
	b64urlSet = byteSet("a-z", "A-Z", "0-9", "_-")     // JWT parts
	bearerSet = byteSet("a-z", "A-Z", "0-9", "._~+/-") // RFC 6750 b64token
	upperNum  = byteSet("A-Z", "0-9")
	slackSet  = byteSet("a-z", "A-Z", "0-9", "-")
	ghPATSet  = byteSet("a-z", "A-Z", "0-9", "_")
)

// secretAt matches a secret shape at text[i]: the span replaced (e > s),
// or none and where to look next (past a run that cannot hold one).
func secretAt(text string, i int, pem *pemIndex) (s, e, next int) {
	rest := text[i:]
	has := func(p string) bool { return strings.HasPrefix(rest, p) }
	run := func(from int, set *[256]bool) int { return tokenEnd(text, from, set) }
	switch {
	case len(rest) >= 6 && strings.EqualFold(rest[:6], "bearer"):
		j := i + 6
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if k == j || (j < len(text) && isAlnum(text[j])) {
			return 0, 0, j
		}
		v := run(k, bearerSet)
		for v < len(text) && text[v] == '=' {
			v++
		}
		if v-k >= 12 && tokenLike(text[k:v]) {
			return k, v, v
		}
		return 0, 0, v
	case has("eyJ"):
		// header.payload.signature, base64url
		a := run(i+3, b64urlSet)
		if a-i >= 8 && after(text, a) == '.' {
			b := run(a+1, b64urlSet)
			if b-a-1 >= 5 && after(text, b) == '.' {
				c := run(b+1, b64urlSet)
				if c-b-1 >= 8 {
					return i, c, c
				}
			}
		}
		return 0, 0, a
	case has("-----BEGIN "):
		return pem.at(text, i)
	}
	// prefix, then a token of the shape's bytes, at least min long
	for _, k := range keyShapes {
		if !has(k.prefix) || (k.third != "" && (len(rest) <= len(k.prefix)+1 || strings.IndexByte(k.third, rest[len(k.prefix)]) < 0 || rest[len(k.prefix)+1] != '-')) {
			continue
		}
		from := i + len(k.prefix)
		if k.third != "" {
			from += 2
		}
		v := run(from, k.set)
		n := v - from
		if n >= k.min && (k.max == 0 || (n <= k.max && !isAlnum(after(text, v)))) && (!k.mixed || hasDigitOrUpper(text[from:v])) {
			return i, v, v
		}
		return 0, 0, v
	}
	return 0, 0, i + 1
}

// keyShapes are the API-key shapes: a prefix (and, for Slack, one of third
// and a dash), then at least min bytes of set (exactly min when max is
// set, and not followed by a letter or digit); mixed: with a digit or a
// capital (sk-learn-… is a package, not a key).
var keyShapes = []struct {
	prefix, third string
	set           *[256]bool
	min, max      int
	mixed         bool
}{
	{prefix: "sk-", set: keySet, min: 20, mixed: true},
	{prefix: "sk_live_", set: alnumSet, min: 16}, {prefix: "sk_test_", set: alnumSet, min: 16},
	{prefix: "pk_live_", set: alnumSet, min: 16}, {prefix: "pk_test_", set: alnumSet, min: 16},
	{prefix: "rk_live_", set: alnumSet, min: 16}, {prefix: "rk_test_", set: alnumSet, min: 16},
	{prefix: "AKIA", set: upperNum, min: 16, max: 16}, {prefix: "ASIA", set: upperNum, min: 16, max: 16},
	{prefix: "ghp_", set: alnumSet, min: 30}, {prefix: "gho_", set: alnumSet, min: 30}, {prefix: "ghu_", set: alnumSet, min: 30},
	{prefix: "ghs_", set: alnumSet, min: 30}, {prefix: "ghr_", set: alnumSet, min: 30},
	{prefix: "github_pat_", set: ghPATSet, min: 30},
	{prefix: "xox", third: "abposre", set: slackSet, min: 10},
	{prefix: "glpat-", set: keySet, min: 20},
	{prefix: "AIza", set: keySet, min: 35},
}

// tokenLike: a Bearer value, not a word ("Bearer tokens", "Bearer
// Authentication"): it has a digit, a capital after a small letter, or
// punctuation.
func tokenLike(v string) bool {
	for k := 0; k < len(v); k++ {
		c := v[k]
		if isDigit(c) || (!isLetter(c) && c != '=') || (k > 0 && c >= 'A' && c <= 'Z' && v[k-1] >= 'a' && v[k-1] <= 'z') {
			return true
		}
	}
	return false
}

func hasDigitOrUpper(v string) bool {
	for k := 0; k < len(v); k++ {
		if c := v[k]; isDigit(c) || (c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// pemIndex finds PEM private keys: `-----BEGIN … PRIVATE KEY-----` to the
// next `-----END … PRIVATE KEY-----`; without one (a key cut short), the
// header and the base64 lines after it. Where the next END and the next
// '"' are is kept between calls, so a text of BEGIN lines is read once.
type pemIndex struct {
	end, quote int // -1: not looked for yet; len(text): none
	init       bool
}

func (p *pemIndex) at(text string, i int) (s, e, next int) {
	const begin = "-----BEGIN "
	hdrEnd := strings.Index(text[i+len(begin):min(len(text), i+len(begin)+64)], "PRIVATE KEY-----")
	if hdrEnd < 0 {
		return 0, 0, i + len(begin)
	}
	hdrEnd += i + len(begin) + len("PRIVATE KEY-----")
	if !p.init || p.end < hdrEnd {
		p.init = true
		p.end = indexFrom(text, hdrEnd, "-----END ")
	}
	if p.quote < hdrEnd {
		p.quote = indexFrom(text, hdrEnd, `"`)
	}
	if p.end < len(text) && p.end < p.quote {
		if k := strings.Index(text[p.end:min(len(text), p.end+80)], "PRIVATE KEY-----"); k >= 0 {
			e := p.end + k + len("PRIVATE KEY-----")
			return i, e, e
		}
	}
	// no END: the header and the key material after it
	e = tokenEnd(text, hdrEnd, pemBodySet)
	return i, e, e
}

var pemBodySet = byteSet("a-z", "A-Z", "0-9", "+/=", " \t\r\n\\")

// indexFrom is the index of sub in text from i on, len(text) if none.
func indexFrom(text string, i int, sub string) int {
	if k := strings.Index(text[i:], sub); k >= 0 {
		return i + k
	}
	return len(text)
}
