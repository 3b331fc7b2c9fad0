package redact

import (
	"regexp"
	"strconv"
	"strings"
)

// Redactor masks what its detectors and patterns find. It is safe for
// concurrent use; a nil *Redactor changes nothing.
type Redactor struct {
	dets []detector
	// tmpl is the replacement split around its placeholders.
	tmpl     string
	numbered bool // the template has {n}
	count    func(detector string)
	// existing finds placeholders of this template already in a text (a
	// judge's reason quotes the prompt's [REDACTED:email#1]): new values
	// are numbered after them, never reusing their numbers. Its first
	// group is the name, its second the number; lit is a literal every
	// placeholder holds, to skip the expression on most texts.
	existing *regexp.Regexp
	lit      string
	// observe, when set (tests), is called with each value replaced.
	observe func(detector, value string)
}

// New builds a redactor from a validated config; count, when not nil, is
// called once per value replaced with the detector's (or pattern's) name.
// A config with no detector and no pattern gives nil (nothing to do).
func New(cfg Config, count func(detector string)) (*Redactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	r := &Redactor{tmpl: cfg.Replacement, numbered: strings.Contains(cfg.Replacement, "{n}"), count: count}
	r.existing, r.lit = placeholderRE(cfg.Replacement, r.numbered)
	// Built-ins in priority order, whatever order the config lists them.
	want := map[string]bool{}
	for _, d := range cfg.Detectors {
		want[d] = true
	}
	for _, b := range Builtins() {
		if want[b] {
			r.dets = append(r.dets, builtin(b))
		}
	}
	for _, p := range cfg.Patterns {
		r.dets = append(r.dets, patternDetector(p.Name, regexp.MustCompile(p.Regex)))
	}
	return r, nil
}

// Names lists the detectors and patterns in use.
func (r *Redactor) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.dets))
	for i, d := range r.dets {
		out[i] = d.name
	}
	return out
}

// Session numbers distinct values across the texts of one document (the
// messages of one judge request, one request body): the same value gets
// the same placeholder, `[REDACTED:email#1]` twice for one address.
type Session struct {
	r    *Redactor
	seen map[string]string // name + "\x00" + normalised value -> placeholder
	next map[string]int
}

// NewSession starts a document. A nil Redactor gives a nil Session, whose
// methods change nothing.
func (r *Redactor) NewSession() *Session {
	if r == nil {
		return nil
	}
	return &Session{r: r}
}

// Text redacts one text with a session of its own (none made when the
// text holds nothing to replace, the common case).
func (r *Redactor) Text(s string) string {
	if r == nil || s == "" {
		return s
	}
	return (&Session{r: r}).Text(s)
}

// JSON redacts one JSON document with a session of its own.
func (r *Redactor) JSON(b []byte) []byte { return r.NewSession().JSON(b) }

// CutMarker is what evalbridge writes where it cut a field to
// max_field_bytes ("…" then " [truncated: N more bytes]").
const CutMarker = "… [truncated: "

// dropCutValues removes, before each cut marker, the partial value the cut
// may have left: the trailing tokens that hold a digit or an '@' (a card
// number cut after 10 digits fails the Luhn check, an address cut before
// its domain is no address; neither must leave). Prose words stay.
func dropCutValues(text string) string {
	if !strings.Contains(text, CutMarker) {
		return text
	}
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, CutMarker)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		start, pos := i, i
		for {
			t := pos
			for t > 0 && tokenByte(rest[t-1]) {
				t--
			}
			if t == pos || !strings.ContainsAny(rest[t:pos], "0123456789@") {
				break
			}
			start = t
			if t == 0 || rest[t-1] != ' ' {
				break
			}
			pos = t - 1
		}
		b.WriteString(rest[:start])
		b.WriteString(rest[i : i+len(CutMarker)])
		rest = rest[i+len(CutMarker):]
	}
}

func tokenByte(c byte) bool {
	return isAlnum(c) || c >= 0x80 || strings.IndexByte("@._%+-()/:=~", c) >= 0
}

// Text redacts text, numbering values within the session. A JSON
// document in it, or the whole of it, keeps its structure (jsontext.go).
func (s *Session) Text(text string) string {
	if s == nil || text == "" {
		return text
	}
	return s.text(text, "", 0)
}

// maxDepth bounds the nesting of JSON in JSON strings that is decoded (each
// level is a string inside the one before, so real nesting is shallow);
// deeper strings are redacted as text, escapes decoded.
const maxDepth = 32

// text redacts text: the JSON documents in it as JSON, the rest as prose.
// label is the JSON key text is the value of ("" for none).
func (s *Session) text(text, label string, depth int) string {
	if strings.Contains(text, CutMarker) {
		text = dropCutValues(text)
	}
	if depth >= maxDepth || (strings.IndexByte(text, '{') < 0 && strings.IndexByte(text, '[') < 0 && strings.IndexByte(text, '"') < 0) {
		return s.prose(text, label)
	}
	var b strings.Builder
	var toks []jsonTok
	last := 0
	// The whole text may be one JSON string ("…"); otherwise documents
	// start at { or [.
	i := 0
	if t := strings.TrimLeft(text, " \t\r\n"); strings.HasPrefix(t, `"`) {
		i = len(text) - len(t)
		if e, tk, ok := scanJSON(text, i, toks[:0]); ok && strings.TrimRight(text[e:], " \t\r\n") == "" {
			b.WriteString(s.prose(text[:i], label))
			s.jsonDocument(&b, text[i:e], shift(tk, i), depth)
			b.WriteString(text[e:])
			return b.String()
		}
	}
	for i < len(text) {
		k := strings.IndexAny(text[i:], "{[")
		if k < 0 {
			break
		}
		p := i + k
		e, tk, ok := scanJSON(text, p, toks[:0])
		toks = tk
		if !ok {
			i = e
			continue
		}
		if b.Len() == 0 && last == 0 {
			b.Grow(len(text))
		}
		b.WriteString(s.prose(text[last:p], labelIf(label, last == 0)))
		s.jsonDocument(&b, text[p:e], shift(toks, p), depth)
		last, i = e, e
	}
	if last == 0 {
		return s.prose(text, label)
	}
	b.WriteString(s.prose(text[last:], ""))
	return b.String()
}

func labelIf(label string, ok bool) string {
	if ok {
		return label
	}
	return ""
}

// shift makes the tokens' offsets relative to the document at p.
func shift(toks []jsonTok, p int) []jsonTok {
	for k := range toks {
		toks[k].start -= p
		toks[k].end -= p
	}
	return toks
}

// maxPasses bounds the passes of prose: a value masked can let a
// neighbour be found (an address glued to a card number is one once the
// number is a placeholder), so prose looks again until nothing more is
// found, which makes redaction idempotent.
const maxPasses = 4

// prose redacts text that is not JSON: escapes decoded (view.go), every
// detector run on it, each value replaced whole in the original.
func (s *Session) prose(text, label string) string {
	for range maxPasses {
		v := newView(text)
		ms := s.r.find(v.text, label)
		if len(ms) == 0 {
			return text
		}
		text = s.replace(text, &v, ms)
	}
	return text
}

// replace writes text with ms (found in v) replaced by their placeholders.
func (s *Session) replace(text string, v *view, ms []match) string {
	s.seed(text)
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range ms {
		start, end := v.span(m.start, m.end)
		if start < last || end <= start {
			continue // never: detectors do not overlap, and a value is not empty
		}
		b.WriteString(text[last:start])
		q := escapedNumberQuote(text, start, end)
		b.WriteString(q)
		b.WriteString(s.placeholder(m.det, v.text[m.start:m.end]))
		b.WriteString(q)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// placeholderRE matches the placeholders a template makes; nil when the
// template does not number them (no {name} and no {n}).
func placeholderRE(tmpl string, numbered bool) (*regexp.Regexp, string) {
	const name, num = `([a-z0-9_]+)`, `([0-9]+)`
	var expr strings.Builder
	lit := ""
	rest := tmpl
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			i = len(rest)
		}
		if len(rest[:i]) > len(lit) {
			lit = rest[:i]
		}
		expr.WriteString(regexp.QuoteMeta(rest[:i]))
		rest = rest[i:]
		switch {
		case rest == "":
		case strings.HasPrefix(rest, "{name}") && numbered:
			expr.WriteString(name)
			rest = rest[len("{name}"):]
		case strings.HasPrefix(rest, "{name}"):
			expr.WriteString(name + "#" + num)
			rest = rest[len("{name}"):]
		case strings.HasPrefix(rest, "{n}"):
			expr.WriteString(num)
			rest = rest[len("{n}"):]
		default:
			expr.WriteString(regexp.QuoteMeta("{"))
			rest = rest[1:]
		}
	}
	if !strings.Contains(tmpl, "{name}") || (numbered && strings.Index(tmpl, "{n}") < strings.Index(tmpl, "{name}")) {
		return nil, "" // no name, or the number before the name: not worth reading back
	}
	re, err := regexp.Compile(expr.String())
	if err != nil {
		return nil, ""
	}
	return re, lit
}

// seed numbers new values after the placeholders already in text.
func (s *Session) seed(text string) {
	re := s.r.existing
	if re == nil || (s.r.lit != "" && !strings.Contains(text, s.r.lit)) {
		return
	}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		if s.next == nil {
			s.seen, s.next = map[string]string{}, map[string]int{}
		}
		if n > s.next[m[1]] {
			s.next[m[1]] = n
		}
	}
}

func (s *Session) placeholder(det int, value string) string {
	name := s.r.dets[det].name
	if s.r.count != nil {
		s.r.count(name)
	}
	if s.r.observe != nil {
		s.r.observe(name, value)
	}
	key := name + "\x00" + normalise(name, value)
	if p, ok := s.seen[key]; ok {
		return p
	}
	if s.seen == nil {
		s.seen, s.next = map[string]string{}, map[string]int{}
	}
	s.next[name]++
	n := strconv.Itoa(s.next[name])
	var p string
	if s.r.numbered {
		p = strings.NewReplacer("{name}", name, "{n}", n).Replace(s.r.tmpl)
	} else {
		p = strings.ReplaceAll(s.r.tmpl, "{name}", name+"#"+n)
	}
	s.seen[key] = p
	return p
}

// normalise makes two spellings of one value one: e-mail case, the
// separators of numbers.
func normalise(name, v string) string {
	switch name {
	case Email:
		return strings.ToLower(v)
	case Phone, CreditCard, IBAN:
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if c := v[i]; isAlnum(c) {
				b.WriteByte(c)
			}
		}
		if name == Phone && strings.HasPrefix(v, "+") {
			return "00" + b.String()
		}
		return strings.ToUpper(b.String())
	}
	return v
}

// JSON redacts a JSON document (a remote body, a webhook payload): its
// strings (keys too) are redacted and re-encoded, numbers that are card
// or phone numbers become string placeholders, and everything else is left
// byte for byte (jsontext.go). Input that is not valid JSON is redacted as
// text. Nothing to replace: the same slice.
func (s *Session) JSON(doc []byte) []byte {
	if s == nil || len(doc) == 0 {
		return doc
	}
	if red := s.Text(string(doc)); red != string(doc) {
		return []byte(red)
	}
	return doc
}
