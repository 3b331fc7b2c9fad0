package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// spansOf returns the spans received for trace id (hex), by name and span id.
func spansOf(be *testkit.Sink, id string) map[string]ptrace.Span {
	out := map[string]ptrace.Span{}
	for _, s := range be.Spans() {
		if s.TraceID().String() == id {
			out[s.Name()+" "+s.SpanID().String()] = s
		}
	}
	return out
}

// recordsOf returns the log records received for trace id (hex): the
// evaluation results and the others.
func recordsOf(be *testkit.Sink, id string) (results, others []plog.LogRecord) {
	for _, ld := range be.Logs() {
		testkit.ForEachLogRecord(ld, func(lr plog.LogRecord) {
			switch {
			case lr.TraceID().String() != id:
			case lr.EventName() == "gen_ai.evaluation.result":
				results = append(results, lr)
			default:
				others = append(others, lr)
			}
		})
	}
	return results, others
}

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
	be := testkit.NewSink(t)
	addr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/logs.yaml", map[string]string{"OTLP": addr, "Backend": be.URL}))
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
			td := testkit.ReadTraces(t, dir+r.traces)
			id := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
			ld := testkit.ReadLogs(t, dir+"logs/"+r.logs)

			deadline := time.Now().Add(20 * time.Second)
			var results, others []plog.LogRecord
			for {
				results, others = recordsOf(be, id)
				if (len(spansOf(be, id)) == td.SpanCount() && len(others) == ld.LogRecordCount() && len(results) >= 2) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			spans := spansOf(be, id)
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
