package evaluators

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/adapter"
)

type retrievalOptions struct {
	Match string `mapstructure:"match"`
	Field string `mapstructure:"field"`
}

type retrieval struct {
	recall bool
	match  string
	field  string
}

func newRetrieval(recall bool) func(*confmap.Conf, Deps) (Evaluator, error) {
	return func(opts *confmap.Conf, _ Deps) (Evaluator, error) {
		o := retrievalOptions{Match: "equality", Field: "content"}
		if err := decodeOptions(opts, &o); err != nil {
			return nil, err
		}
		switch o.Match {
		case "equality", "case_insensitive", "containment":
		default:
			return nil, fmt.Errorf("option `match`: %q is not one of equality, case_insensitive, containment", o.Match)
		}
		switch o.Field {
		case "content", "id":
		default:
			return nil, fmt.Errorf("option `field`: %q is not one of content, id", o.Field)
		}
		return &retrieval{recall: recall, match: o.Match, field: o.Field}, nil
	}
}

// expectedValue reads one expected document: a string, or an object's
// `id` (field: id) or `content` / `text` / `page_content` (field: content).
func (r *retrieval) expectedValue(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		keys := []string{"content", "text", "page_content", "document"}
		if r.field == "id" {
			keys = []string{"id", "document_id", "doc_id"}
		}
		for _, k := range keys {
			if s, ok := t[k]; ok {
				return fmt.Sprint(s)
			}
		}
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func (r *retrieval) docValue(d *adapter.Document) string {
	if r.field == "id" {
		return d.ID
	}
	return d.Content
}

// matches: retrieved value against an expected value. containment: the
// retrieved value contains the expected one.
func (r *retrieval) matches(retrieved, expected string) bool {
	if retrieved == "" || expected == "" {
		return false
	}
	switch r.match {
	case "case_insensitive":
		return strings.EqualFold(strings.TrimSpace(retrieved), strings.TrimSpace(expected))
	case "containment":
		return strings.Contains(retrieved, expected)
	}
	return retrieved == expected
}

func (r *retrieval) Evaluate(_ context.Context, c *adapter.Case) Result {
	if !c.Expected.HasDocuments {
		return Skipped("no expected documents: set the span attribute eval.expected.documents")
	}
	if len(c.Expected.Documents) == 0 {
		return Skipped("the expected documents list is empty")
	}
	exp := make([]string, len(c.Expected.Documents))
	for i, v := range c.Expected.Documents {
		exp[i] = r.expectedValue(v)
	}
	docs := c.Documents
	what := "content"
	if r.field == "id" {
		what = "id"
	}
	if len(docs) == 0 {
		if !r.recall {
			return Skipped("no documents were retrieved; precision is undefined")
		}
		return Scored(0, fmt.Sprintf("no documents were retrieved; 0 of %d expected documents found", len(exp)),
			map[string]float64{"relevant_retrieved": 0, "retrieved": 0, "expected": float64(len(exp))})
	}
	vals := make([]string, len(docs))
	for i := range docs {
		vals[i] = r.docValue(&docs[i])
	}
	if r.recall {
		found := 0
		var missed []string
		for _, e := range exp {
			hit := false
			for _, v := range vals {
				if r.matches(v, e) {
					hit = true
					break
				}
			}
			if hit {
				found++
			} else if len(missed) < 5 {
				missed = append(missed, truncate(e, 60))
			}
		}
		reason := fmt.Sprintf("%d of %d expected documents retrieved (by %s, %s)", found, len(exp), what, r.match)
		if len(missed) > 0 {
			reason += "; not retrieved: " + strings.Join(missed, ", ")
		}
		return Scored(float64(found)/float64(len(exp)), reason,
			map[string]float64{"relevant_retrieved": float64(found), "retrieved": float64(len(docs)), "expected": float64(len(exp))})
	}
	relevant := 0
	var irrelevant []string
	for i, v := range vals {
		hit := false
		for _, e := range exp {
			if r.matches(v, e) {
				hit = true
				break
			}
		}
		if hit {
			relevant++
		} else if len(irrelevant) < 5 {
			label := docs[i].ID
			if label == "" || r.field != "id" {
				label = truncate(v, 60)
			}
			irrelevant = append(irrelevant, fmt.Sprintf("#%d %s", i+1, label))
		}
	}
	reason := fmt.Sprintf("%d of %d retrieved documents are relevant (by %s, %s)", relevant, len(docs), what, r.match)
	if len(irrelevant) > 0 {
		reason += "; not relevant: " + strings.Join(irrelevant, ", ")
	}
	return Scored(float64(relevant)/float64(len(docs)), reason,
		map[string]float64{"relevant_retrieved": float64(relevant), "retrieved": float64(len(docs)), "expected": float64(len(exp))})
}
