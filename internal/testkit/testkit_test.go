package testkit

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

func post(t *testing.T, url string, body []byte) int {
	t.Helper()
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSinkKeepsWhatItReceives(t *testing.T) {
	s := NewSink(t)
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	spans.AppendEmpty().SetName("a")
	spans.AppendEmpty().SetName("b")
	raw, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if code := post(t, s.URL+"/v1/traces", raw); code != http.StatusOK {
		t.Fatalf("traces: %d", code)
	}
	spans.At(1).SetName("a")
	raw, _ = ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	post(t, s.URL+"/v1/traces", raw)
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetName("m")
	raw, _ = pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if code := post(t, s.URL+"/api/v1/otlp/v1/metrics", raw); code != http.StatusOK {
		t.Fatalf("metrics under a prefix: %d", code)
	}
	if code := post(t, s.URL+"/v1/traces", []byte("not proto")); code != http.StatusBadRequest {
		t.Errorf("garbage: %d", code)
	}
	if code := post(t, s.URL+"/other", raw); code != http.StatusNotFound {
		t.Errorf("other path: %d", code)
	}
	if s.SpanCount() != 4 || len(s.Traces()) != 2 {
		t.Errorf("%d spans in %d requests, want 4 in 2", s.SpanCount(), len(s.Traces()))
	}
	if _, ok := s.Span("b"); !ok {
		t.Error("span b")
	}
	if _, ok := s.LastMetric("m"); !ok {
		t.Error("metric m")
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE x_total counter\nx_total{a=\"1\",b=\"q\\\"r\"} 2\nx_total{a=\"2\"} 3\n# HELP y\ny 1.5\n")
	}))
	defer srv.Close()
	e := Scrape(t, srv.URL)
	if e.Types["x_total"] != "counter" || e.Total("x_total", nil) != 5 || e.Total("x_total", map[string]string{"a": "1"}) != 2 || e.Total("y", nil) != 1.5 {
		t.Errorf("%+v", e)
	}
	if e.Samples[0].Labels["b"] != `q\"r` || !e.LabelNames()["x_total"]["b"] {
		t.Errorf("labels %v", e.Samples[0].Labels)
	}
}

func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("endpoint: {{.Addr}}\nkey: ${env:KEY}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Config(t, path, map[string]string{"Addr": "127.0.0.1:1"}); got != "endpoint: 127.0.0.1:1\nkey: ${env:KEY}\n" {
		t.Errorf("%q", got)
	}
}

// The judge latency histogram as shipped before: seconds on the SDK's
// millisecond buckets. Five calls of 19 ms in all land in le="5", and the
// p90 from the buckets (4.5 s) is a thousand times the mean: a problem. On
// buckets that resolve milliseconds the same calls are not.
func TestHistogramBucketProblem(t *testing.T) {
	exposition := func(bounds []string, counts []int) string {
		var b bytes.Buffer
		b.WriteString("# TYPE judge_duration histogram\n")
		for i, le := range bounds {
			fmt.Fprintf(&b, "judge_duration_bucket{judge=\"default\",le=%q} %d\n", le, counts[i])
		}
		b.WriteString("judge_duration_sum{judge=\"default\"} 0.019\njudge_duration_count{judge=\"default\"} 5\n")
		return b.String()
	}
	for _, c := range []struct {
		name    string
		bounds  []string
		counts  []int
		p90     float64
		problem bool
	}{
		{"sdk default buckets", []string{"0", "5", "10", "25", "+Inf"}, []int{0, 5, 5, 5, 5}, 4.5, true},
		{"millisecond buckets", []string{"0.001", "0.0025", "0.005", "0.01", "+Inf"}, []int{0, 2, 5, 5, 5}, 0.0025 + 0.0025*2.5/3, false},
		{"beyond the last bucket", []string{"0.001", "0.0025", "+Inf"}, []int{0, 2, 5}, 0.0025, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(exposition(c.bounds, c.counts)))
		}))
		hs := Scrape(t, srv.URL).Histograms()
		srv.Close()
		if len(hs) != 1 || hs[0].Count != 5 || hs[0].Labels["judge"] != "default" {
			t.Fatalf("%s: histograms %+v", c.name, hs)
		}
		if got := hs[0].Quantile(0.9); got < c.p90*0.999 || got > c.p90*1.001 {
			t.Errorf("%s: p90 %v, want %v", c.name, got, c.p90)
		}
		if p := hs[0].BucketProblem(); (p != "") != c.problem {
			t.Errorf("%s: problem %q, want one: %v", c.name, p, c.problem)
		}
	}
}
