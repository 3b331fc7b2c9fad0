package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/evalbridge/evalbridge/internal/testkit"
	"github.com/evalbridge/evalbridge/processor/evalprocessor"
)

// judgeStub answers every chat-completions request with a score of 1 and
// keeps the system messages it was sent.
type judgeStub struct {
	mu      sync.Mutex
	systems []string
}

func (j *judgeStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	j.mu.Lock()
	for _, m := range req.Messages {
		if m.Role == "system" {
			j.systems = append(j.systems, m.Content)
		}
	}
	j.mu.Unlock()
	_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{\"score\": 1, \"reason\": \"fine\"}"}}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
}

// TestProcessorAndEvalctlAgreeOnVersion: one config file gives the eval
// processor's result events and evalctl's summary the same versions and
// types, a judge evaluator's (its few-shot examples included) too; and the
// examples reach the judge redacted.
func TestProcessorAndEvalctlAgreeOnVersion(t *testing.T) {
	stub := &judgeStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	examples := writeFile(t, "examples.jsonl",
		`{"input":"Where is order 42?","output":"It shipped.","label":"fail","critique":"ada@example.com was never told the date"}`+"\n")
	cfgPath := writeFile(t, "agree.yaml", "wait: 50ms\njudges:\n  default:\n    endpoint: "+srv.URL+"\n    model: m\n"+
		"evaluators:\n  - type: tool_error\n    name: no_tool_errors\n"+
		"  - type: llm_judge\n    name: helpful\n    judge: default\n    criteria: The agent helps.\n    examples: "+examples+"\n")
	in := exampleTraces[0]

	code, js, stderr := runEvalctl(t, "", "run", "--config", cfgPath, "--summary", "json", in)
	if code != exitOK {
		t.Fatalf("evalctl: exit %d\n%s", code, stderr)
	}
	fromCLI := summaryVersions(t, js)
	if fromCLI["helpful"][1] != "llm_judge" || fromCLI["no_tool_errors"][1] != "deterministic" {
		t.Fatalf("types: %v", fromCLI)
	}

	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ret, err := confmap.NewRetrievedFromYAML(raw)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := ret.AsConf()
	if err != nil {
		t.Fatal(err)
	}
	f := evalprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	if err := conf.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	sink := &consumertest.TracesSink{}
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	td := testkit.ReadTraces(t, in)
	want := td.SpanCount()
	if err := p.ConsumeTraces(context.Background(), td); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for sink.SpanCount() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	fromProcessor := map[string][2]string{}
	for _, td := range sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					evs := spans.At(k).Events()
					for e := 0; e < evs.Len(); e++ {
						a := evs.At(e).Attributes()
						name, _ := a.Get("gen_ai.evaluation.name")
						v, _ := a.Get("gen_ai.evaluation.evaluator.version")
						ty, _ := a.Get("gen_ai.evaluation.evaluator.type")
						fromProcessor[name.Str()] = [2]string{v.Str(), ty.Str()}
					}
				}
			}
		}
	}
	if len(fromProcessor) != 2 || fromProcessor["helpful"] != fromCLI["helpful"] || fromProcessor["no_tool_errors"] != fromCLI["no_tool_errors"] {
		t.Errorf("processor %v, evalctl %v", fromProcessor, fromCLI)
	}

	stub.mu.Lock()
	defer stub.mu.Unlock()
	if len(stub.systems) == 0 {
		t.Fatal("the judge was never asked")
	}
	for _, s := range stub.systems {
		if !strings.Contains(s, "<examples>") || !strings.Contains(s, "was never told the date") || !strings.Contains(s, `"verdict": "fail"`) {
			t.Fatalf("the examples are not in the prompt:\n%s", s)
		}
		if strings.Contains(s, "ada@example.com") || !strings.Contains(s, "[REDACTED:email") {
			t.Fatalf("the example's e-mail address reached the judge unredacted:\n%s", s)
		}
	}
}
