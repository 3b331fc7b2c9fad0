package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

const (
	otlpExample   = "../../examples/traces/travel-agent-wrong-order.json"
	jaegerExample = "../../examples/jaeger/travel-agent-wrong-order.json"
)

// jaegerExport of OTLP traces, as Jaeger's query API writes them after
// ingesting OTLP: tags typed, slices as JSON strings (Jaeger has no array
// tag), the span's kind/status/scope as otel.* tags, events as logs. It
// wrote examples/jaeger/ (EVALCTL_WRITE_JAEGER_EXAMPLE=1 rewrites it); the
// tests below check the reading side against the OTLP original.
func jaegerExportOf(t *testing.T, td ptrace.Traces) []byte {
	t.Helper()
	type kv struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	tags := func(m pcommon.Map) []kv {
		out := []kv{}
		m.Range(func(k string, v pcommon.Value) bool {
			switch v.Type() {
			case pcommon.ValueTypeBool:
				out = append(out, kv{k, "bool", v.Bool()})
			case pcommon.ValueTypeInt:
				out = append(out, kv{k, "int64", v.Int()})
			case pcommon.ValueTypeDouble:
				out = append(out, kv{k, "float64", v.Double()})
			default:
				out = append(out, kv{k, "string", v.AsString()})
			}
			return true
		})
		return out
	}
	// Jaeger's field order (model/json), so the file reads like a real export.
	type jspan struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		Flags         int    `json:"flags"`
		OperationName string `json:"operationName"`
		References    []any  `json:"references"`
		StartTime     uint64 `json:"startTime"`
		Duration      uint64 `json:"duration"`
		Tags          []kv   `json:"tags"`
		Logs          []any  `json:"logs"`
		ProcessID     string `json:"processID"`
		Warnings      any    `json:"warnings"`
	}
	type trace struct {
		TraceID   string         `json:"traceID"`
		Spans     []jspan        `json:"spans"`
		Processes map[string]any `json:"processes"`
		Warnings  any            `json:"warnings"`
	}
	byTrace := map[string]*trace{}
	var order []string
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		res := rs.Resource().Attributes()
		svc, _ := res.Get("service.name")
		procTags := pcommon.NewMap()
		res.CopyTo(procTags)
		procTags.Remove("service.name")
		pid := "p" + string(rune('1'+i))
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				tid := s.TraceID().String()
				tr := byTrace[tid]
				if tr == nil {
					tr = &trace{TraceID: tid, Processes: map[string]any{}}
					byTrace[tid] = tr
					order = append(order, tid)
				}
				tr.Processes[pid] = map[string]any{"serviceName": svc.Str(), "tags": tags(procTags)}
				st := tags(s.Attributes())
				if ss.Scope().Name() != "" {
					st = append(st, kv{"otel.scope.name", "string", ss.Scope().Name()})
				}
				if kind := strings.ToLower(s.Kind().String()); s.Kind() != ptrace.SpanKindUnspecified {
					st = append(st, kv{"span.kind", "string", kind})
				}
				switch s.Status().Code() {
				case ptrace.StatusCodeError:
					st = append(st, kv{"otel.status_code", "string", "ERROR"}, kv{"error", "bool", true})
					if s.Status().Message() != "" {
						st = append(st, kv{"otel.status_description", "string", s.Status().Message()})
					}
				case ptrace.StatusCodeOk:
					st = append(st, kv{"otel.status_code", "string", "OK"})
				}
				refs := []any{}
				if !s.ParentSpanID().IsEmpty() {
					refs = append(refs, map[string]any{"refType": "CHILD_OF", "traceID": tid, "spanID": s.ParentSpanID().String()})
				}
				logs := []any{}
				for e := 0; e < s.Events().Len(); e++ {
					ev := s.Events().At(e)
					fields := append([]kv{{"event", "string", ev.Name()}}, tags(ev.Attributes())...)
					logs = append(logs, map[string]any{"timestamp": uint64(ev.Timestamp()) / 1000, "fields": fields})
				}
				start := uint64(s.StartTimestamp()) / 1000
				tr.Spans = append(tr.Spans, jspan{
					TraceID: tid, SpanID: s.SpanID().String(), Flags: 1, OperationName: s.Name(), References: refs,
					StartTime: start, Duration: uint64(s.EndTimestamp())/1000 - start, Tags: st, Logs: logs, ProcessID: pid,
				})
			}
		}
	}
	data := []any{}
	for _, id := range order {
		data = append(data, byTrace[id])
	}
	b, err := json.MarshalIndent(map[string]any{"data": data, "total": 0, "limit": 0, "offset": 0, "errors": nil}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func readOTLPFile(t *testing.T, path string) ptrace.Traces { return testkit.ReadTraces(t, path) }

func TestJaegerExampleIsTheExportOfTheOTLPExample(t *testing.T) {
	want := jaegerExportOf(t, readOTLPFile(t, otlpExample))
	if os.Getenv("EVALCTL_WRITE_JAEGER_EXAMPLE") == "1" {
		if err := os.MkdirAll(filepath.Dir(jaegerExample), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jaegerExample, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(jaegerExample)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is not the Jaeger export of %s (EVALCTL_WRITE_JAEGER_EXAMPLE=1 rewrites it)", jaegerExample, otlpExample)
	}
}

// spanView is what scoring reads of a span, with slices compared as the
// JSON string Jaeger turns them into.
type spanView struct {
	Resource, Attrs             map[string]any
	Scope, Name, Parent, Status string
	Kind                        ptrace.SpanKind
	Start, End                  pcommon.Timestamp
	Events                      []string
}

func spansOf(td ptrace.Traces) map[string]spanView {
	flat := func(m pcommon.Map) map[string]any {
		out := map[string]any{}
		m.Range(func(k string, v pcommon.Value) bool {
			if v.Type() == pcommon.ValueTypeSlice || v.Type() == pcommon.ValueTypeMap {
				out[k] = v.AsString()
			} else {
				out[k] = v.AsRaw()
			}
			return true
		})
		return out
	}
	out := map[string]spanView{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				v := spanView{
					Resource: flat(rs.Resource().Attributes()), Attrs: flat(s.Attributes()), Scope: ss.Scope().Name(),
					Name: s.Name(), Parent: s.ParentSpanID().String(), Kind: s.Kind(),
					Status: s.Status().Code().String() + ":" + s.Status().Message(),
					Start:  s.StartTimestamp(), End: s.EndTimestamp(),
				}
				for e := 0; e < s.Events().Len(); e++ {
					v.Events = append(v.Events, s.Events().At(e).Name())
				}
				out[s.TraceID().String()+"/"+s.SpanID().String()] = v
			}
		}
	}
	return out
}

// The Jaeger reader gives back the spans of the OTLP original: ids, parents
// from CHILD_OF, µs times, kinds, statuses, typed attributes, events.
func TestJaegerInputReadsBackTheOTLPSpans(t *testing.T) {
	f, err := os.Open(jaegerExample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := readDocuments("jaeger", f)
	if err != nil {
		t.Fatal(err)
	}
	got, want := spansOf(docs[0].traces), spansOf(readOTLPFile(t, otlpExample))
	if len(got) != len(want) || len(want) < 5 {
		t.Fatalf("%d spans, want %d", len(got), len(want))
	}
	for id, w := range want {
		if g := got[id]; !reflect.DeepEqual(g, w) {
			t.Errorf("span %s:\n got %+v\nwant %+v", id, g, w)
		}
	}
}

// The Jaeger export of a trace scores exactly as its OTLP export: the same
// summary and the same results written on the spans.
func TestJaegerInputScoresAsTheOTLPExport(t *testing.T) {
	dir := t.TempDir()
	score := func(input string) (string, map[string]any) {
		out := filepath.Join(dir, filepath.Base(filepath.Dir(input))+".jsonl")
		code, stdout, stderr := runEvalctl(t, "", "run", "--config", "../../examples/evalctl.yaml", "--summary", "json", "--out", out, input)
		if code != exitFailed {
			t.Fatalf("%s: exit %d, want 1 (the wrong-order run fails)\n%s", input, code, stderr)
		}
		evals := map[string]any{}
		for id, s := range spansOf(readOTLPFile(t, out)) {
			for k, v := range s.Attrs {
				if strings.HasPrefix(k, "eval.") && !strings.HasPrefix(k, "eval.expected.") {
					evals[id+" "+k] = v
				}
			}
		}
		return stdout, evals
	}
	otlpSum, otlpEvals := score(otlpExample)
	jaegerSum, jaegerEvals := score(jaegerExample)
	if otlpSum != jaegerSum {
		t.Errorf("summaries differ:\nOTLP:\n%s\nJaeger:\n%s", otlpSum, jaegerSum)
	}
	if len(otlpEvals) < 10 || !reflect.DeepEqual(otlpEvals, jaegerEvals) {
		t.Errorf("results on the spans differ:\nOTLP:   %v\nJaeger: %v", otlpEvals, jaegerEvals)
	}
	if !strings.Contains(jaegerSum, `"booking_flow"`) || !strings.Contains(jaegerSum, `"failed": 2`) {
		t.Errorf("summary lacks the failures:\n%s", jaegerSum)
	}
}

// The finer points of the mapping, on a hand-written export: ids without
// leading zeros, a FOLLOWS_FROM-only parent, the deprecated parentSpanID,
// the error tag without otel.status_code, int64 beyond 2^53, binary tags,
// untyped values, inline processes and a trace object without "data".
func TestJaegerMappingDetails(t *testing.T) {
	doc := `{"traceID": "abc", "spans": [
	  {"traceID": "abc", "spanID": "1", "operationName": "root", "startTime": 1700000000000001, "duration": 5,
	   "references": [], "process": {"serviceName": "svc", "tags": [{"key": "host", "type": "string", "value": "h1"}]},
	   "tags": [{"key": "big", "type": "int64", "value": 9007199254740993}, {"key": "blob", "type": "binary", "value": "aGk="},
	            {"key": "untyped", "value": 1.5}, {"key": "error", "type": "bool", "value": true},
	            {"key": "span.kind", "type": "string", "value": "server"}],
	   "logs": [{"timestamp": 1700000000000002, "fields": [{"key": "event", "type": "string", "value": "exception"},
	            {"key": "exception.message", "type": "string", "value": "boom"}]}]},
	  {"traceID": "0000000000000abc", "spanID": "2", "operationName": "next", "startTime": 1700000000000003, "duration": 1,
	   "references": [{"refType": "FOLLOWS_FROM", "traceID": "abc", "spanID": "1"}, {"refType": "CHILD_OF", "traceID": "def", "spanID": "9"}],
	   "tags": [], "processID": "p1"},
	  {"traceID": "abc", "spanID": "3", "parentSpanID": "2", "operationName": "old", "startTime": 1700000000000004, "duration": 1,
	   "tags": [], "processID": "p1"}],
	 "processes": {"p1": {"serviceName": "svc2", "tags": []}}}`
	docs, err := readDocuments("hand", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	td := docs[0].traces
	if td.SpanCount() != 3 {
		t.Fatalf("%d spans", td.SpanCount())
	}
	var root, next, old ptrace.Span
	var rootRes pcommon.Map
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		spans := rs.ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			switch s := spans.At(k); s.Name() {
			case "root":
				root, rootRes = s, rs.Resource().Attributes()
			case "next":
				next = s
			case "old":
				old = s
			}
		}
	}
	if got := root.TraceID().String(); got != "00000000000000000000000000000abc" {
		t.Errorf("trace id %s", got)
	}
	if root.SpanID().String() != "0000000000000001" || root.StartTimestamp() != 1700000000000001000 || root.EndTimestamp() != 1700000000000006000 {
		t.Errorf("root id/times: %s %d %d", root.SpanID(), root.StartTimestamp(), root.EndTimestamp())
	}
	if root.Kind() != ptrace.SpanKindServer || root.Status().Code() != ptrace.StatusCodeError {
		t.Errorf("root kind %v status %v", root.Kind(), root.Status().Code())
	}
	a := root.Attributes().AsRaw()
	if a["big"] != int64(9007199254740993) || string(a["blob"].([]byte)) != "hi" || a["untyped"] != 1.5 {
		t.Errorf("root attributes %v", a)
	}
	if _, ok := a["error"]; ok {
		t.Error("the error tag should become the status, not an attribute")
	}
	if h, _ := rootRes.Get("host"); h.Str() != "h1" {
		t.Errorf("inline process tags: %v", rootRes.AsRaw())
	}
	if root.Events().Len() != 1 || root.Events().At(0).Name() != "exception" || root.Events().At(0).Timestamp() != 1700000000000002000 {
		t.Errorf("events: %d", root.Events().Len())
	}
	if next.ParentSpanID().String() != "0000000000000001" || next.Links().Len() != 1 {
		t.Errorf("next: parent %s, %d links (the CHILD_OF to another trace is a link)", next.ParentSpanID(), next.Links().Len())
	}
	if old.ParentSpanID().String() != "0000000000000002" {
		t.Errorf("old: parent %s from parentSpanID", old.ParentSpanID())
	}
}

// A file with no trace of any known form is bad input naming the file —
// not zero traces and exit 0, a gate that passes on nothing.
func TestNoTraceFoundIsBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty-jaeger.json": `{"data": [], "total": 0}`,
		"empty-otlp.json":   `{"resourceSpans": []}`,
		"other.json":        `{"traces": [{"id": 1}]}`,
		"bad-tag.json":      `{"data": [{"traceID": "1", "spans": [{"traceID": "1", "spanID": "1", "tags": [{"key": "n", "type": "int64", "value": "x"}]}]}]}`,
		"bad-id.json":       `{"data": [{"traceID": "zz", "spans": [{"traceID": "zz", "spanID": "1"}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runEvalctl(t, "", "run", "--config", "../../examples/evalctl.yaml", p)
			if code != exitUsage || !strings.Contains(stderr, name) {
				t.Errorf("exit %d, stderr %q: want 2 naming %s", code, stderr, name)
			}
		})
	}
}
