package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/evalbridge/evalbridge/internal/otlphttpbody"
)

// signalBackend is an OTLP/HTTP endpoint for traces and logs that keeps
// what it receives.
type signalBackend struct {
	mu     sync.Mutex
	traces []ptrace.Traces
	logs   []plog.Logs
}

func (b *signalBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := otlphttpbody.Read(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp []byte
	switch r.URL.Path {
	case "/v1/traces":
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.traces = append(b.traces, req.Traces())
		b.mu.Unlock()
		resp, _ = ptraceotlp.NewExportResponse().MarshalProto()
	case "/v1/logs":
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.logs = append(b.logs, req.Logs())
		b.mu.Unlock()
		resp, _ = plogotlp.NewExportResponse().MarshalProto()
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// spansOf returns the spans received for trace id (hex), by name.
func (b *signalBackend) spansOf(id string) map[string]ptrace.Span {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]ptrace.Span{}
	for _, td := range b.traces {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j).Spans()
				for k := 0; k < ss.Len(); k++ {
					if s := ss.At(k); s.TraceID().String() == id {
						out[s.Name()+" "+s.SpanID().String()] = s
					}
				}
			}
		}
	}
	return out
}

// recordsOf returns the log records received for trace id (hex): the
// evaluation results and the others.
func (b *signalBackend) recordsOf(id string) (results, others []plog.LogRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ld := range b.logs {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			sls := rls.At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					if lr.TraceID().String() != id {
						continue
					}
					if lr.EventName() == "gen_ai.evaluation.result" {
						results = append(results, lr)
					} else {
						others = append(others, lr)
					}
				}
			}
		}
	}
	return results, others
}

const logsE2EConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s
processors:
  eval:
    wait: 300ms
    evaluators:
      - type: tool_trajectory
        mode: strict
        expected: [search_flights, book_hotel]
      - type: regex
        name: cites_flight
        case: agent
        pattern: 'TP 541'
exporters:
  otlp_http:
    endpoint: %[2]s
    retry_on_failure:
      enabled: false
` + quietService + `    traces:
      receivers: [otlp]
      processors: [eval]
      exporters: [otlp_http]
    logs:
      receivers: [otlp]
      processors: [eval]
      exporters: [otlp_http]
`

// postJSON sends an OTLP/JSON export request, as the JS exporters do.
func postJSON(t *testing.T, url, file string) {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
}

// The official JS instrumentation puts chat content in log records only:
// real captures of it (Chat Completions and Responses API), spans and
// records sent as separate OTLP requests in either order through the built
// distribution, come out scored from the records' content; the records
// come out unchanged and complete; each result is also a
// gen_ai.evaluation.result record parented to the evaluated span.
func TestLogsPipelineEndToEnd(t *testing.T) {
	be := &signalBackend{}
	srv := httptest.NewServer(be)
	defer srv.Close()
	addr := freeAddr(t)
	startCollector(t, fmt.Sprintf(logsE2EConfig, addr, srv.URL))
	base := "http://" + addr

	runs := []struct {
		name, traces, logs string
		logsFirst          bool
	}{
		{"chat completions, spans first", "otel-instrumentation-openai.json", "otel-instrumentation-openai.logs.json", false},
		{"responses api, logs first", "otel-instrumentation-openai-responses.json", "otel-instrumentation-openai-responses.logs.json", true},
	}
	dir := "../../interop/testdata/"
	for _, r := range runs {
		if r.logsFirst {
			postJSON(t, base+"/v1/logs", dir+"logs/"+r.logs)
			postJSON(t, base+"/v1/traces", dir+r.traces)
		} else {
			postJSON(t, base+"/v1/traces", dir+r.traces)
			postJSON(t, base+"/v1/logs", dir+"logs/"+r.logs)
		}
	}

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			raw, err := os.ReadFile(dir + r.traces)
			if err != nil {
				t.Fatal(err)
			}
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
			if err != nil {
				t.Fatal(err)
			}
			id := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
			rawLogs, err := os.ReadFile(dir + "logs/" + r.logs)
			if err != nil {
				t.Fatal(err)
			}
			ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(rawLogs)
			if err != nil {
				t.Fatal(err)
			}

			deadline := time.Now().Add(20 * time.Second)
			var results, others []plog.LogRecord
			for {
				results, others = be.recordsOf(id)
				if (len(be.spansOf(id)) == td.SpanCount() && len(others) == ld.LogRecordCount() && len(results) >= 2) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			spans := be.spansOf(id)
			if len(spans) != td.SpanCount() || len(others) != ld.LogRecordCount() {
				t.Fatalf("backend has %d of %d spans and %d of %d log records", len(spans), td.SpanCount(), len(others), ld.LogRecordCount())
			}
			var agent ptrace.Span
			for _, s := range spans {
				if v, ok := s.Attributes().Get("gen_ai.operation.name"); ok && v.Str() == "invoke_agent" {
					agent = s
				}
			}
			for _, key := range []string{"eval.tool_trajectory.status", "eval.cites_flight.status"} {
				if v, _ := agent.Attributes().Get(key); v.Str() != "passed" {
					t.Errorf("%s = %q, want passed (the answer is in the log records)", key, v.Str())
				}
			}
			// the records, unchanged: every input record's body arrived as it was sent
			sent := map[string]int{}
			lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := 0; i < lrs.Len(); i++ {
				sent[recordKey(lrs.At(i))]++
			}
			for _, lr := range others {
				sent[recordKey(lr)]--
			}
			for k, n := range sent {
				if n != 0 {
					t.Errorf("record %s: %d more sent than received", k, n)
				}
			}
			if len(results) != 2 {
				t.Fatalf("%d result records, want 2", len(results))
			}
			for _, res := range results {
				if res.SpanID() != agent.SpanID() {
					t.Errorf("result record parented to %s, want the agent span %s", res.SpanID(), agent.SpanID())
				}
				if v, _ := res.Attributes().Get("gen_ai.evaluation.score.label"); v.Str() != "pass" {
					t.Errorf("result label %q", v.Str())
				}
			}
		})
	}
}

func recordKey(lr plog.LogRecord) string {
	return fmt.Sprintf("%s/%s/%v/%d/%v", lr.SpanID(), lr.EventName(), lr.Attributes().AsRaw(), lr.Timestamp(), lr.Body().AsRaw())
}
