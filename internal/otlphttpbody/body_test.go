package otlphttpbody

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

func TestTracesPlainAndGzip(t *testing.T) {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("chat")
	raw, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	for name, body := range map[string][]byte{"plain": raw, "gzip": zipped.Bytes()} {
		r := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
		if name == "gzip" {
			r.Header.Set("Content-Encoding", "gzip")
		}
		w := httptest.NewRecorder()
		got, ok := Traces(w, r)
		if !ok || got.SpanCount() != 1 || got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name() != "chat" {
			t.Errorf("%s: ok=%v spans=%d", name, ok, got.SpanCount())
		}
	}
	w := httptest.NewRecorder()
	if _, ok := Logs(w, httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader([]byte("not proto")))); ok || w.Code != http.StatusBadRequest {
		t.Errorf("garbage: ok=%v code=%d", ok, w.Code)
	}
}
