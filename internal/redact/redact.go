package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
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
		r.dets = append(r.dets, detector{name: p.Name, re: regexp.MustCompile(p.Regex)})
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
	text, ms := r.matches(s)
	if len(ms) == 0 {
		return text
	}
	return r.NewSession().replace(text, ms)
}

// JSON redacts one JSON document with a session of its own.
func (r *Redactor) JSON(b []byte) []byte { return r.NewSession().JSON(b) }

type match struct {
	start, end int
	det        int
}

// find returns the non-overlapping matches of every detector, earlier
// detectors first where two claim the same characters, in text order.
func (r *Redactor) find(text string) []match {
	st := scan(text)
	return r.findScanned(text, &st)
}

// findScanned is find with st = scan(text): detectors whose gate says
// they can find nothing are skipped.
func (r *Redactor) findScanned(text string, st *textStats) []match {
	var out []match
	for di := range r.dets {
		d := &r.dets[di]
		if !d.gate.open(st) {
			continue
		}
		if d.windows == nil {
			out = d.findIn(text, 0, len(text), di, out)
			continue
		}
		for _, w := range d.windows(text) {
			out = d.findIn(text, w[0], w[1], di, out)
		}
	}
	return out
}

// findIn adds the detector's matches within text[ws:we] to out, where they
// overlap none there already.
func (d *detector) findIn(text string, ws, we, di int, out []match) []match {
	for _, loc := range d.re.FindAllStringSubmatchIndex(text[ws:we], -1) {
		s, e := ws+loc[0], ws+loc[1]
		check := d.check
		if d.group > 0 && loc[2*d.group] >= 0 {
			s, e = ws+loc[2*d.group], ws+loc[2*d.group+1]
			check = d.groupCheck
		}
		if s == e {
			continue
		}
		if check != nil {
			var ok bool
			if s, e, ok = check(text, s, e); !ok {
				continue
			}
		}
		// insert unless it overlaps a match already taken
		i := sort.Search(len(out), func(i int) bool { return out[i].end > s })
		if i < len(out) && out[i].start < e {
			continue
		}
		out = append(out, match{})
		copy(out[i+1:], out[i:])
		out[i] = match{start: s, end: e, det: di}
	}
	return out
}

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

// Text redacts s, numbering values within the session.
func (s *Session) Text(text string) string {
	if s == nil || text == "" {
		return text
	}
	text, ms := s.r.matches(text)
	if len(ms) == 0 {
		return text
	}
	return s.replace(text, ms)
}

// matches drops the partial values before cut markers, then finds the
// values to replace in what remains.
func (r *Redactor) matches(text string) (string, []match) {
	st := scan(text)
	if st.cut {
		if cut := dropCutValues(text); cut != text {
			text, st = cut, scan(cut)
		}
	}
	return text, r.findScanned(text, &st)
}

// replace writes text with ms replaced by their placeholders.
func (s *Session) replace(text string, ms []match) string {
	s.seed(text)
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range ms {
		b.WriteString(text[last:m.start])
		b.WriteString(s.placeholder(m.det, text[m.start:m.end]))
		last = m.end
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

// JSON redacts the strings of a JSON document (keys and values), leaving
// its structure and layout as they are, so the result is valid JSON that
// reads like the original. Replaced strings are re-encoded the way
// encoding/json does (<, > and & escaped). Input that is not valid JSON
// is redacted as text.
func (s *Session) JSON(doc []byte) []byte {
	if s == nil || len(doc) == 0 {
		return doc
	}
	if !json.Valid(doc) {
		return []byte(s.Text(string(doc)))
	}
	var out []byte
	last := 0
	for i := 0; i < len(doc); i++ {
		if c := doc[i]; c == '-' || isDigit(c) {
			// A number: a card or phone number written as one is
			// replaced by a string placeholder.
			end := i + 1
			for end < len(doc) && (isDigit(doc[end]) || strings.IndexByte(".eE+-", doc[end]) >= 0) {
				end++
			}
			if num := string(doc[i:end]); end-i >= 7 {
				if red := s.Text(num); red != num {
					enc, _ := json.Marshal(red)
					out = append(append(grow(out, doc), doc[last:i]...), enc...)
					last = end
				}
			}
			i = end - 1
			continue
		}
		if doc[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end++
			}
			end++
		}
		end++ // past the closing quote
		lit := doc[i:end]
		var str string
		if bytes.IndexByte(lit, '\\') < 0 {
			str = string(lit[1 : len(lit)-1])
		} else if err := json.Unmarshal(lit, &str); err != nil {
			i = end - 1
			continue
		}
		if red := s.Text(str); red != str {
			enc, _ := json.Marshal(red)
			out = append(append(grow(out, doc), doc[last:i]...), enc...)
			last = end
		}
		i = end - 1
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

func grow(out, doc []byte) []byte {
	if out == nil {
		return make([]byte, 0, len(doc)+64)
	}
	return out
}
