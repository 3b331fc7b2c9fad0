package evaluators

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

type retrievalOptions struct {
	// Match is a strategy name (equality, case_insensitive, containment) or,
	// as the contract lists it among them, `{field: id}`: compare a field.
	Match any    `mapstructure:"match"`
	Field string `mapstructure:"field"`
	// Expected (or ExpectedDocuments, the attribute's name) are the relevant
	// documents or ids when no span carries eval.expected.documents
	// (docs/contract.md §3): a list, or a string holding a JSON array.
	Expected          any `mapstructure:"expected"`
	ExpectedDocuments any `mapstructure:"expected_documents"`
}

// parseExpectedDocuments reads the configured expected documents.
func (o retrievalOptions) parseExpectedDocuments() ([]any, bool, error) {
	v, err := expectedOrAlias(o.Expected, o.ExpectedDocuments, "expected_documents")
	if err != nil || v == nil {
		return nil, false, err
	}
	if s, ok := v.(string); ok {
		x, err := parseJSON(s)
		if err != nil {
			return nil, false, fmt.Errorf("option `expected`: not a JSON array: %v", err)
		}
		v = x
	}
	arr, ok := normalizeAny(v).([]any)
	if !ok {
		return nil, false, fmt.Errorf("option `expected`: want a list of documents or ids, got %v", v)
	}
	return arr, true, nil
}

type retrieval struct {
	recall bool
	match  string
	cfg    []any
	hasCfg bool
	// field is "id", "content", or "" when not given: then a document
	// matches by its content (under match) or by its id (equality, or
	// case-insensitive equality under case_insensitive), since
	// eval.expected.documents holds "relevant documents / ids".
	field string
}

// parseRetrievalMatch reads `match`: a strategy name, or `{field: X}`
// (also written as the string "field: X"), which compares field X by
// equality. It returns the strategy and the field ("" when not named).
func parseRetrievalMatch(v any) (match, field string, err error) {
	const want = "one of equality, case_insensitive, containment, or {field: id}"
	switch t := v.(type) {
	case nil:
		return "equality", "", nil
	case string:
		s := strings.TrimSpace(t)
		if rest, ok := strings.CutPrefix(s, "field"); ok {
			rest = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(rest), ":="))
			if rest == "" {
				rest = "id"
			}
			return "equality", rest, nil
		}
		switch s {
		case "equality", "case_insensitive", "containment":
			return s, "", nil
		}
		return "", "", fmt.Errorf("option `match`: %q is not %s", t, want)
	case map[string]any:
		for k := range t {
			if k != "field" {
				return "", "", fmt.Errorf("option `match`: unknown key `%s` (want %s)", k, want)
			}
		}
		f, ok := t["field"].(string)
		if !ok || strings.TrimSpace(f) == "" {
			return "", "", fmt.Errorf("option `match.field`: want a field name such as id")
		}
		return "equality", strings.TrimSpace(f), nil
	}
	return "", "", fmt.Errorf("option `match`: want %s, got %v", want, v)
}

func newRetrieval(recall bool) func(*confmap.Conf, Deps) (Evaluator, error) {
	return func(opts *confmap.Conf, _ Deps) (Evaluator, error) {
		var o retrievalOptions
		if err := decodeOptions(opts, &o); err != nil {
			return nil, err
		}
		match, mf, err := parseRetrievalMatch(o.Match)
		if err != nil {
			return nil, err
		}
		field := o.Field
		if mf != "" {
			if field != "" && field != mf {
				return nil, fmt.Errorf("options `match` (field %s) and `field` (%s) disagree", mf, field)
			}
			field = mf
		}
		switch field {
		case "", "content", "id":
		default:
			return nil, fmt.Errorf("option `field`: %q is not one of content, id", field)
		}
		cfg, has, err := o.parseExpectedDocuments()
		if err != nil {
			return nil, err
		}
		return &retrieval{recall: recall, match: match, field: field, cfg: cfg, hasCfg: has}, nil
	}
}

// expectedItem is one expected document: its id and its content. A string
// item is both; an object gives `id` / `document_id` / `doc_id` and
// `content` / `text` / `page_content` / `document`.
type expectedItem struct{ id, content string }

func expectedValue(v any) expectedItem {
	switch t := v.(type) {
	case string:
		return expectedItem{t, t}
	case map[string]any:
		var it expectedItem
		for _, k := range []string{"id", "document_id", "doc_id"} {
			if s, ok := t[k]; ok && s != nil {
				it.id = fmt.Sprint(s)
				break
			}
		}
		for _, k := range []string{"content", "text", "page_content", "document"} {
			if s, ok := t[k]; ok && s != nil {
				it.content = fmt.Sprint(s)
				break
			}
		}
		return it
	case nil:
		return expectedItem{}
	}
	s := fmt.Sprint(v)
	return expectedItem{s, s}
}

func (e expectedItem) label(field string) string {
	if field == "id" || (field == "" && e.content == "") {
		return e.id
	}
	return e.content
}

// docMatches: a retrieved document against an expected item.
func (r *retrieval) docMatches(d *adapter.Document, e expectedItem) bool {
	switch r.field {
	case "id":
		return r.matches(d.ID, e.id)
	case "content":
		return r.matches(d.Content, e.content)
	}
	if r.matches(d.Content, e.content) {
		return true
	}
	if d.ID == "" || e.id == "" {
		return false
	}
	if r.match == "case_insensitive" {
		return strings.EqualFold(strings.TrimSpace(d.ID), strings.TrimSpace(e.id))
	}
	return d.ID == e.id
}

// matches: a retrieved value against an expected value. containment, as in
// Dokimos' MatchingStrategy.byContainment: either contains the other.
func (r *retrieval) matches(retrieved, expected string) bool {
	if retrieved == "" || expected == "" {
		return false
	}
	switch r.match {
	case "case_insensitive":
		return strings.EqualFold(strings.TrimSpace(retrieved), strings.TrimSpace(expected))
	case "containment":
		return strings.Contains(retrieved, expected) || strings.Contains(expected, retrieved)
	}
	return retrieved == expected
}

// canonicalOptions spells `expected` (or `expected_documents`) as decoded,
// and `match` and `field` as the strategy and the field they decode to
// (spelledOptions): `match: {field: id}`, `match: "field: id"` and
// `field: id` are one option.
func (r *retrieval) canonicalOptions(kept map[string]any) map[string]any {
	var docs any
	if r.hasCfg {
		docs = r.cfg
	}
	kept = respelled(kept, []string{"expected", "expected_documents"}, map[string]any{"expected": docs})
	var match, field any
	if r.match != "equality" {
		match = r.match
	}
	if r.field != "" {
		field = r.field
	}
	return respelled(kept, []string{"match", "field"}, map[string]any{"match": match, "field": field})
}

func (r *retrieval) Evaluate(ctx context.Context, c *adapter.Case) Result {
	expDocs, has := c.Expected.Documents, c.Expected.HasDocuments
	if !has {
		expDocs, has = r.cfg, r.hasCfg
	}
	if !has {
		return Skipped("no expected documents: set the span attribute eval.expected.documents or the evaluator's `expected` option")
	}
	if len(expDocs) == 0 {
		return Skipped("the expected documents list is empty")
	}
	exp := make([]expectedItem, len(expDocs))
	for i, v := range expDocs {
		exp[i] = expectedValue(v)
	}
	docs := c.Documents
	what := "content or id"
	switch r.field {
	case "id":
		what = "id"
	case "content":
		what = "content"
	}
	if len(docs) == 0 {
		if !r.recall {
			return Skipped("no documents were retrieved; precision is undefined")
		}
		return Scored(0, fmt.Sprintf("no documents were retrieved; 0 of %d expected documents found", len(exp)),
			map[string]float64{"relevant_retrieved": 0, "retrieved": 0, "expected": float64(len(exp))})
	}
	if r.recall {
		found := tally{max: 5}
		for k, e := range exp {
			if k%64 == 63 && ctx.Err() != nil {
				return timedOut(ctx, fmt.Sprintf("looking for %d expected documents among %d retrieved", len(exp), len(docs)))
			}
			hit := false
			for i := range docs {
				if r.docMatches(&docs[i], e) {
					hit = true
					break
				}
			}
			found.add(hit, func() string { return truncate(e.label(r.field), 60) })
		}
		reason := fmt.Sprintf("%d of %d expected documents retrieved (by %s, %s)", found.passed, len(exp), what, r.match) +
			found.note("not retrieved", ", ")
		return Scored(float64(found.passed)/float64(len(exp)), reason,
			map[string]float64{"relevant_retrieved": float64(found.passed), "retrieved": float64(len(docs)), "expected": float64(len(exp))})
	}
	relevant := tally{max: 5}
	for i := range docs {
		if i%64 == 63 && ctx.Err() != nil {
			return timedOut(ctx, fmt.Sprintf("checking %d retrieved documents against %d expected", len(docs), len(exp)))
		}
		hit := false
		for _, e := range exp {
			if r.docMatches(&docs[i], e) {
				hit = true
				break
			}
		}
		relevant.add(hit, func() string {
			label := docs[i].ID
			if label == "" || r.field == "content" {
				label = truncate(docs[i].Content, 60)
			}
			return fmt.Sprintf("#%d %s", i+1, label)
		})
	}
	reason := fmt.Sprintf("%d of %d retrieved documents are relevant (by %s, %s)", relevant.passed, len(docs), what, r.match) +
		relevant.note("not relevant", ", ")
	return Scored(float64(relevant.passed)/float64(len(docs)), reason,
		map[string]float64{"relevant_retrieved": float64(relevant.passed), "retrieved": float64(len(docs)), "expected": float64(len(exp))})
}
