package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Jaeger JSON input: what Jaeger's query API and UI export,
// {"data": [{"traceID", "spans": […], "processes": {…}}]}, or one such
// trace object alone. It is converted to ptrace with the mapping Jaeger
// itself uses between its model and OTLP (the collector-contrib jaeger
// translator): typed tags become attributes, microsecond times become
// nanoseconds, the CHILD_OF reference (else FOLLOWS_FROM) in the same trace
// is the parent and any other reference a link, the span.kind,
// otel.status_code / otel.status_description / error, otel.scope.name and
// w3c.tracestate tags become the span's own fields, and logs become events
// named by their "event" field. The engine then scores it as any OTLP trace.

type jaegerExport struct {
	Data []jaegerTrace `json:"data"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string         `json:"traceID"`
	SpanID        string         `json:"spanID"`
	ParentSpanID  string         `json:"parentSpanID"` // deprecated by references, still written by old clients
	OperationName string         `json:"operationName"`
	References    []jaegerRef    `json:"references"`
	StartTime     uint64         `json:"startTime"` // µs since the epoch
	Duration      uint64         `json:"duration"`  // µs
	Tags          []jaegerKV     `json:"tags"`
	Logs          []jaegerLog    `json:"logs"`
	ProcessID     string         `json:"processID"`
	Process       *jaegerProcess `json:"process"`
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        []jaegerKV `json:"tags"`
}

type jaegerLog struct {
	Timestamp uint64     `json:"timestamp"`
	Fields    []jaegerKV `json:"fields"`
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// documentKind tells an OTLP/JSON export request from a Jaeger export by
// its top-level keys; "" when it is neither.
func documentKind(raw []byte) string {
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return ""
	}
	switch {
	case keys["resourceSpans"] != nil || keys["resource_spans"] != nil:
		return "otlp"
	case keys["resourceLogs"] != nil || keys["resource_logs"] != nil:
		return "otlp-logs"
	case keys["data"] != nil:
		return "jaeger"
	case keys["spans"] != nil && keys["traceID"] != nil:
		return "jaeger-trace"
	}
	return ""
}

// jaegerToTraces converts one Jaeger JSON document (kind "jaeger" or
// "jaeger-trace").
func jaegerToTraces(raw []byte, kind string) (ptrace.Traces, error) {
	var traces []jaegerTrace
	dec := json.NewDecoder(bytes.NewReader(raw))
	if kind == "jaeger-trace" {
		var t jaegerTrace
		if err := dec.Decode(&t); err != nil {
			return ptrace.Traces{}, fmt.Errorf("not a Jaeger JSON trace: %w", err)
		}
		traces = []jaegerTrace{t}
	} else {
		var doc jaegerExport
		if err := dec.Decode(&doc); err != nil {
			return ptrace.Traces{}, fmt.Errorf("not a Jaeger JSON export: %w", err)
		}
		traces = doc.Data
	}
	td := ptrace.NewTraces()
	for ti := range traces {
		if err := addJaegerTrace(td, &traces[ti]); err != nil {
			return ptrace.Traces{}, fmt.Errorf("Jaeger trace %d (%s): %w", ti+1, traces[ti].TraceID, err)
		}
	}
	return td, nil
}

func addJaegerTrace(td ptrace.Traces, t *jaegerTrace) error {
	// One ResourceSpans per process, one ScopeSpans per scope within it,
	// in order of first appearance.
	resources := map[string]ptrace.ResourceSpans{}
	scopes := map[string]ptrace.ScopeSpans{}
	for si := range t.Spans {
		js := &t.Spans[si]
		procKey, proc := js.ProcessID, js.Process
		if proc == nil {
			p, ok := t.Processes[js.ProcessID]
			if !ok && js.ProcessID != "" {
				return fmt.Errorf("span %s: processID %q is not in \"processes\"", js.SpanID, js.ProcessID)
			}
			proc = &p
		} else {
			procKey = "inline:" + strconv.Itoa(si)
		}
		rs, ok := resources[procKey]
		if !ok {
			rs = td.ResourceSpans().AppendEmpty()
			attrs := rs.Resource().Attributes()
			if proc.ServiceName != "" {
				attrs.PutStr("service.name", proc.ServiceName)
			}
			for _, kv := range proc.Tags {
				if err := putJaegerTag(attrs, kv); err != nil {
					return fmt.Errorf("process %s: %w", js.ProcessID, err)
				}
			}
			resources[procKey] = rs
		}
		if err := addJaegerSpan(rs, scopes, procKey, js); err != nil {
			return fmt.Errorf("span %s: %w", js.SpanID, err)
		}
	}
	return nil
}

func addJaegerSpan(rs ptrace.ResourceSpans, scopes map[string]ptrace.ScopeSpans, procKey string, js *jaegerSpan) error {
	tid, err := jaegerTraceID(js.TraceID)
	if err != nil {
		return err
	}
	sid, err := jaegerSpanID(js.SpanID)
	if err != nil {
		return err
	}
	// The span's own fields first, so the scope is known before the span
	// is appended to it.
	var scopeName, scopeVersion, kind, statusCode, statusMsg, traceState string
	errorTag := false
	attrs := pcommon.NewMap()
	for _, kv := range js.Tags {
		switch kv.Key {
		case "otel.scope.name", "otel.library.name":
			scopeName = jaegerString(kv.Value)
		case "otel.scope.version", "otel.library.version":
			scopeVersion = jaegerString(kv.Value)
		case "span.kind":
			kind = jaegerString(kv.Value)
		case "otel.status_code":
			statusCode = jaegerString(kv.Value)
		case "otel.status_description":
			statusMsg = jaegerString(kv.Value)
		case "w3c.tracestate":
			traceState = jaegerString(kv.Value)
		case "error":
			errorTag = jaegerString(kv.Value) == "true"
		default:
			if err := putJaegerTag(attrs, kv); err != nil {
				return err
			}
		}
	}
	scopeKey := procKey + "\x00" + scopeName + "\x00" + scopeVersion
	ss, ok := scopes[scopeKey]
	if !ok {
		ss = rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(scopeName)
		ss.Scope().SetVersion(scopeVersion)
		scopes[scopeKey] = ss
	}
	span := ss.Spans().AppendEmpty()
	attrs.MoveTo(span.Attributes())
	span.SetTraceID(tid)
	span.SetSpanID(sid)
	span.SetName(js.OperationName)
	span.TraceState().FromRaw(traceState)
	span.SetStartTimestamp(pcommon.Timestamp(js.StartTime * 1000))
	span.SetEndTimestamp(pcommon.Timestamp((js.StartTime + js.Duration) * 1000))
	span.SetKind(jaegerKind(kind))
	switch {
	case strings.EqualFold(statusCode, "ERROR"):
		span.Status().SetCode(ptrace.StatusCodeError)
	case strings.EqualFold(statusCode, "OK"):
		span.Status().SetCode(ptrace.StatusCodeOk)
	case errorTag:
		span.Status().SetCode(ptrace.StatusCodeError)
	}
	if span.Status().Code() == ptrace.StatusCodeError {
		span.Status().SetMessage(statusMsg)
	}

	parent := -1
	for _, want := range []string{"CHILD_OF", "FOLLOWS_FROM"} {
		for i, r := range js.References {
			if parent < 0 && strings.EqualFold(r.RefType, want) && sameTraceID(r.TraceID, js.TraceID) {
				parent = i
			}
		}
	}
	for i, r := range js.References {
		rsid, err := jaegerSpanID(r.SpanID)
		if err != nil {
			return fmt.Errorf("reference %d: %w", i+1, err)
		}
		if i == parent {
			span.SetParentSpanID(rsid)
			continue
		}
		rtid, err := jaegerTraceID(r.TraceID)
		if err != nil {
			return fmt.Errorf("reference %d: %w", i+1, err)
		}
		link := span.Links().AppendEmpty()
		link.SetTraceID(rtid)
		link.SetSpanID(rsid)
	}
	if parent < 0 && js.ParentSpanID != "" && strings.Trim(js.ParentSpanID, "0") != "" {
		psid, err := jaegerSpanID(js.ParentSpanID)
		if err != nil {
			return fmt.Errorf("parentSpanID: %w", err)
		}
		span.SetParentSpanID(psid)
	}

	for li, l := range js.Logs {
		ev := span.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(l.Timestamp * 1000))
		for _, kv := range l.Fields {
			if kv.Key == "event" {
				ev.SetName(jaegerString(kv.Value))
				continue
			}
			if err := putJaegerTag(ev.Attributes(), kv); err != nil {
				return fmt.Errorf("log %d: %w", li+1, err)
			}
		}
	}
	return nil
}

func jaegerKind(k string) ptrace.SpanKind {
	switch strings.ToLower(k) {
	case "client":
		return ptrace.SpanKindClient
	case "server":
		return ptrace.SpanKindServer
	case "producer":
		return ptrace.SpanKindProducer
	case "consumer":
		return ptrace.SpanKindConsumer
	case "internal":
		return ptrace.SpanKindInternal
	}
	return ptrace.SpanKindUnspecified
}

// putJaegerTag puts one typed tag. Values are read from their JSON text,
// so an int64 above 2^53 keeps its digits; a tag without a type takes the
// JSON value's.
func putJaegerTag(m pcommon.Map, kv jaegerKV) error {
	raw := bytes.TrimSpace(kv.Value)
	typ := strings.ToLower(kv.Type)
	if typ == "" {
		switch {
		case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
			m.PutEmpty(kv.Key)
			return nil
		case raw[0] == '"':
			typ = "string"
		case bytes.Equal(raw, []byte("true")) || bytes.Equal(raw, []byte("false")):
			typ = "bool"
		case bytes.ContainsAny(raw, ".eE"):
			typ = "float64"
		default:
			typ = "int64"
		}
	}
	bad := func(err error) error {
		return fmt.Errorf("tag %q: %s value %s: %w", kv.Key, typ, clip(string(raw), 60), err)
	}
	text := jaegerString(raw)
	switch typ {
	case "string":
		m.PutStr(kv.Key, text)
	case "bool":
		b, err := strconv.ParseBool(text)
		if err != nil {
			return bad(err)
		}
		m.PutBool(kv.Key, b)
	case "int64":
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return bad(err)
		}
		m.PutInt(kv.Key, i)
	case "float64":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return bad(err)
		}
		m.PutDouble(kv.Key, f)
	case "binary":
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return bad(err)
		}
		m.PutEmptyBytes(kv.Key).FromRaw(b)
	default:
		return bad(errors.New("unknown tag type (want string, bool, int64, float64 or binary)"))
	}
	return nil
}

// jaegerString is a JSON value's text: a string's contents, else the
// literal (a number or true/false as written).
func jaegerString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// Jaeger writes ids as hex without leading zeros (and 64-bit trace ids as
// 16 digits); OTLP's are fixed width.
func jaegerTraceID(s string) (id pcommon.TraceID, err error) {
	return id, fixedHex(id[:], "traceID", s)
}

func jaegerSpanID(s string) (id pcommon.SpanID, err error) {
	return id, fixedHex(id[:], "spanID", s)
}

// fixedHex decodes s, left-padded with zeros, into all of dst.
func fixedHex(dst []byte, what, s string) error {
	n := len(dst)
	if s == "" || len(s) > 2*n {
		return fmt.Errorf("%s %q: want 1 to %d hex digits", what, s, 2*n)
	}
	if _, err := hex.Decode(dst, []byte(strings.Repeat("0", 2*n-len(s))+s)); err != nil {
		return fmt.Errorf("%s %q: %w", what, s, err)
	}
	return nil
}

func sameTraceID(a, b string) bool {
	x, err1 := jaegerTraceID(a)
	y, err2 := jaegerTraceID(b)
	return err1 == nil && err2 == nil && x == y
}
