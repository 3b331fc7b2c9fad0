// Package interop checks the adapter against spans written by real
// instrumentation libraries. The fixtures in testdata/ are OTLP/JSON export
// requests produced by interop/node (see README.md); the tests need no Node.
package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
)

// What the scripted conversation in interop/node/lib (server.mjs, agent.mjs)
// contains.
const (
	userRequest   = "Find me a flight from Berlin to Lisbon on 4 December 2026 and book a hotel in Lisbon for 5 nights."
	finalText     = "You are on TP 541 from BER to LIS on 4 December 2026 (departs 10:05, EUR 129), and Hotel Avenida in Lisbon is booked for 5 nights (confirmation HX-4471)."
	systemPrompt  = "You are a travel agent. Use the tools to search flights and book hotels, then summarise."
	responseModel = "gpt-4o-mini-2024-07-18"
	flightsResult = `{"flights":[{"flight":"TP 541","origin":"BER","destination":"LIS","date":"2026-12-04","departs":"10:05","price_eur":129},{"flight":"LH 1166","origin":"BER","destination":"LIS","date":"2026-12-04","departs":"14:40","price_eur":187}]}`
	hotelResult   = `{"confirmation":"HX-4471","hotel":"Hotel Avenida","city":"Lisbon","nights":5}`
)

type call struct {
	name, id, args, result string
}

var calls = []call{
	{"search_flights", "call_sf_001", `{"origin":"BER","destination":"LIS","date":"2026-12-04"}`, flightsResult},
	{"book_hotel", "call_bh_002", `{"city":"Lisbon","nights":5}`, hotelResult},
}

// Per model call: input, output, total tokens.
var turnUsage = [3][3]int64{{142, 31, 173}, {221, 24, 245}, {268, 46, 314}}

// fixture is what one library's spans carry, and so what the cases must hold.
type fixture struct {
	file string

	agentSpan  string
	agentName  string
	agentModel string
	provider   string
	llmSpan    string

	// content: the LLM spans carry the conversation (false for
	// @opentelemetry/instrumentation-openai, whose content is in log records).
	content bool
	// callIDs: tool-call ids are recorded (not by OpenLLMetry 0.22).
	callIDs bool
	// toolDefs: the tools offered to the model are recorded.
	toolDefs bool
	// responseIDs: gen_ai.response.id / ai.response.id is recorded.
	responseIDs bool
	// totalTokens: a total token count is recorded on the LLM spans.
	totalTokens bool
	// assistantCallsInHistory: earlier assistant turns in the input
	// messages keep their tool calls (OpenLLMetry 0.22 drops them).
	assistantCallsInHistory bool
	// logs: the OTLP/JSON logs file in testdata/logs/ holding the content
	// the spans lack (see logs_test.go).
	logs string
	// respPrefix: the response ids' prefix (default chatcmpl-interop-).
	respPrefix string
}

func (f fixture) responseID(i int) string {
	p := f.respPrefix
	if p == "" {
		p = "chatcmpl-interop-"
	}
	return fmt.Sprintf("%s%d", p, i+1)
}

var fixtures = []fixture{
	{
		// @arizeai/openinference-instrumentation-openai 4.2.7 on openai 7.57.0,
		// AGENT/TOOL spans from @arizeai/openinference-core 2.7.1 traceAgent/traceTool.
		file:      "openinference.json",
		agentSpan: "travel-agent", agentName: "travel-agent", // no agent.name: the AGENT span's name
		agentModel: responseModel, provider: "openai", llmSpan: "OpenAI Chat Completions",
		content: true, callIDs: true, toolDefs: true, responseIDs: false, totalTokens: true,
		assistantCallsInHistory: true,
	},
	{
		// @traceloop/node-server-sdk 0.22.8 (instrumentation-openai 0.22.5) on openai 5.23.2.
		file:      "openllmetry-0.22.json",
		agentSpan: "travel-agent.agent", agentName: "travel-agent",
		agentModel: responseModel, provider: "OpenAI", llmSpan: "openai.chat",
		content: true, callIDs: false, toolDefs: true, responseIDs: false, totalTokens: true,
		assistantCallsInHistory: false,
	},
	{
		// @traceloop/node-server-sdk 0.27.0 (instrumentation-openai 0.27.0) on openai 6.49.0.
		file:      "openllmetry-0.27.json",
		agentSpan: "travel-agent.agent", agentName: "travel-agent",
		agentModel: responseModel, provider: "openai", llmSpan: "chat gpt-4o-mini",
		content: true, callIDs: true, toolDefs: true, responseIDs: true, totalTokens: true,
		assistantCallsInHistory: true,
	},
	{
		// @opentelemetry/instrumentation-openai 0.21.0 on openai 6.49.0; the
		// invoke_agent / execute_tool spans are the application's (semconv).
		file:      "otel-instrumentation-openai.json",
		agentSpan: "invoke_agent travel-agent", agentName: "travel-agent",
		agentModel: "gpt-4o-mini", provider: "openai", llmSpan: "chat gpt-4o-mini",
		content: false, callIDs: true, toolDefs: false, responseIDs: true, totalTokens: false,
		logs: "otel-instrumentation-openai.logs.json",
	},
	{
		// The same instrumentation on openai 6.49.0's Responses API (semconv
		// 1.38: two gen_ai.client.inference.operation.details records per call).
		file:      "otel-instrumentation-openai-responses.json",
		agentSpan: "invoke_agent travel-agent", agentName: "travel-agent",
		agentModel: "gpt-4o-mini", provider: "openai", llmSpan: "chat gpt-4o-mini",
		content: false, callIDs: true, toolDefs: false, responseIDs: true, totalTokens: false,
		logs: "otel-instrumentation-openai-responses.logs.json", respPrefix: "resp_interop_",
	},
	{
		// ai 5.0.277 with @ai-sdk/openai 2.0.131 (chat API), experimental_telemetry.
		file:      "vercel-ai-v5.json",
		agentSpan: "ai.generateText", agentName: "travel-agent", // ai.telemetry.functionId
		agentModel: "gpt-4o-mini", provider: "openai.chat", llmSpan: "ai.generateText.doGenerate",
		content: true, callIDs: true, toolDefs: true, responseIDs: true, totalTokens: false,
		assistantCallsInHistory: true,
	},
}

func load(t *testing.T, file string) []adapter.Case {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	traces := adapter.GroupByTrace(td)
	if len(traces) != 1 {
		t.Fatalf("%s: %d traces, want 1", file, len(traces))
	}
	for _, spans := range traces {
		if len(spans) != 6 {
			t.Fatalf("%s: %d spans, want 6 (agent, 3 llm, 2 tool)", file, len(spans))
		}
		cases, problems := adapter.Adapt(spans)
		if len(problems) > 0 {
			t.Errorf("problems: %q", problems)
		}
		return cases
	}
	return nil
}

func split(t *testing.T, cases []adapter.Case) (agent adapter.Case, llms []adapter.Case) {
	t.Helper()
	var agents []adapter.Case
	for _, c := range cases {
		switch c.Level {
		case adapter.LevelAgent:
			agents = append(agents, c)
		case adapter.LevelLLM:
			llms = append(llms, c)
		}
	}
	if len(agents) != 1 || len(llms) != 3 {
		t.Fatalf("%d agent and %d llm cases, want 1 and 3", len(agents), len(llms))
	}
	return agents[0], llms
}

// sameJSON reports whether got, encoded, is the JSON value want.
func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

func TestEveryFixtureHasExpectations(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	for _, f := range fixtures {
		known = append(known, f.file)
	}
	for _, f := range files {
		if !slices.Contains(known, filepath.Base(f)) {
			t.Errorf("%s has no expectations in fixtures", f)
		}
	}
	if len(files) != len(fixtures) {
		t.Errorf("%d fixture files, %d expected", len(files), len(fixtures))
	}
}

func TestRealLibraries(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			agent, llms := split(t, load(t, f.file))
			t.Run("agent", func(t *testing.T) { checkAgent(t, f, agent) })
			t.Run("llm", func(t *testing.T) { checkLLMs(t, f, llms) })
		})
	}
}

func checkAgent(t *testing.T, f fixture, c adapter.Case) {
	if c.SpanName != f.agentSpan {
		t.Errorf("SpanName = %q, want %q", c.SpanName, f.agentSpan)
	}
	wantIn, wantOut, wantSys := userRequest, finalText, systemPrompt
	if !f.content {
		// Content is in log records (testdata/logs/); the spans have none.
		wantIn, wantOut, wantSys = "", "", ""
	}
	if c.Input != wantIn {
		t.Errorf("Input = %q, want %q", c.Input, wantIn)
	}
	if c.Output != wantOut {
		t.Errorf("Output = %q, want %q", c.Output, wantOut)
	}
	if c.SystemInstructions != wantSys {
		t.Errorf("SystemInstructions = %q, want %q", c.SystemInstructions, wantSys)
	}
	if c.AgentName != f.agentName {
		t.Errorf("AgentName = %q, want %q", c.AgentName, f.agentName)
	}
	if c.Model != f.agentModel {
		t.Errorf("Model = %q, want %q", c.Model, f.agentModel)
	}
	if c.Provider != f.provider {
		t.Errorf("Provider = %q, want %q", c.Provider, f.provider)
	}
	if f.responseIDs && c.ResponseID != f.responseID(2) {
		t.Errorf("ResponseID = %q, want the last model call's", c.ResponseID)
	}
	if c.Latency <= 0 {
		t.Errorf("Latency = %v", c.Latency)
	}

	// Tool calls: from the tool spans, in order, arguments decoded as objects.
	if len(c.ToolCalls) != len(calls) {
		t.Fatalf("%d tool calls, want %d: %+v", len(c.ToolCalls), len(calls), c.ToolCalls)
	}
	for i, w := range calls {
		g := c.ToolCalls[i]
		if g.Name != w.name {
			t.Errorf("call %d: Name = %q, want %q", i, g.Name, w.name)
		}
		if g.Arguments == nil || !sameJSON(t, g.Arguments, w.args) {
			t.Errorf("call %d: Arguments = %v (raw %q), want %s", i, g.Arguments, g.RawArguments, w.args)
		}
		if !g.HasResult || g.Result != w.result {
			t.Errorf("call %d: Result = %q (has %v), want %q", i, g.Result, g.HasResult, w.result)
		}
		wantID := w.id
		if !f.callIDs {
			wantID = ""
		}
		if g.ID != wantID {
			t.Errorf("call %d: ID = %q, want %q", i, g.ID, wantID)
		}
		if g.Errored {
			t.Errorf("call %d: Errored", i)
		}
		if g.SpanID.IsEmpty() || g.Duration <= 0 {
			t.Errorf("call %d: not from a tool span (SpanID %v, Duration %v)", i, g.SpanID, g.Duration)
		}
	}

	checkToolDefs(t, f, c.ToolDefinitions)

	// Token usage of the run: the sum of the three model calls.
	t.Run("usage", func(t *testing.T) {
		u := c.Usage
		// ai 5 puts the LAST step's usage (268/46) on its ai.generateText
		// span; the run's usage is the sum of the model calls.
		if u.InputTokens != 631 || u.OutputTokens != 101 || !u.HasInputTokens || !u.HasOutputTokens {
			t.Errorf("Usage = %+v, want input 631, output 101", u)
		}
		if total, ok := u.Total(); !ok || total != 732 {
			t.Errorf("Usage.Total() = %d, %v, want 732", total, ok)
		}
		if u.HasTotalTokens != f.totalTokens {
			t.Errorf("HasTotalTokens = %v, want %v", u.HasTotalTokens, f.totalTokens)
		}
	})

	if f.content {
		checkConversation(t, f, c.Messages)
	}
}

func checkToolDefs(t *testing.T, f fixture, defs []adapter.ToolDefinition) {
	t.Helper()
	if !f.toolDefs {
		if len(defs) != 0 {
			t.Errorf("ToolDefinitions = %+v, want none (not recorded)", defs)
		}
		return
	}
	if len(defs) != 2 {
		t.Fatalf("%d tool definitions, want 2: %+v", len(defs), defs)
	}
	want := []struct{ name, desc, required string }{
		{"search_flights", "Search flights between two airports on a date.", `["origin","destination"]`},
		{"book_hotel", "Book a hotel in a city for a number of nights.", `["city","nights"]`},
	}
	for i, w := range want {
		d := defs[i]
		if d.Name != w.name || d.Description != w.desc {
			t.Errorf("definition %d = %q %q, want %q %q", i, d.Name, d.Description, w.name, w.desc)
		}
		if d.Parameters == nil || d.Parameters["type"] != "object" || !sameJSON(t, d.Parameters["required"], w.required) {
			t.Errorf("definition %d: Parameters = %v, want the object schema requiring %s", i, d.Parameters, w.required)
		}
	}
}

// checkConversation checks the full conversation as the last model call saw it.
func checkConversation(t *testing.T, f fixture, msgs []adapter.Message) {
	t.Helper()
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	want := []string{"system", "user", "assistant", "tool", "assistant", "tool", "assistant"}
	if !slices.Equal(roles, want) {
		t.Fatalf("message roles = %v, want %v", roles, want)
	}
	if msgs[0].Content != systemPrompt || msgs[1].Content != userRequest || msgs[6].Content != finalText {
		t.Errorf("system/user/final contents = %q / %q / %q", msgs[0].Content, msgs[1].Content, msgs[6].Content)
	}
	for k, w := range calls {
		a, tm := msgs[2+2*k], msgs[3+2*k]
		if a.Content != "" {
			t.Errorf("assistant turn %d: Content = %q, want empty (it only called a tool)", k, a.Content)
		}
		if f.assistantCallsInHistory {
			if len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != w.name || a.ToolCalls[0].ID != w.id ||
				!sameJSON(t, a.ToolCalls[0].Arguments, w.args) {
				t.Errorf("assistant turn %d: ToolCalls = %+v, want %s(%s) id %s", k, a.ToolCalls, w.name, w.args, w.id)
			}
		} else if len(a.ToolCalls) != 0 {
			t.Errorf("assistant turn %d: ToolCalls = %+v, want none (not recorded)", k, a.ToolCalls)
		}
		if tm.Content != w.result {
			t.Errorf("tool message %d: Content = %q, want %q", k, tm.Content, w.result)
		}
		wantID := w.id
		if !f.callIDs {
			wantID = ""
		}
		if tm.ToolCallID != wantID {
			t.Errorf("tool message %d: ToolCallID = %q, want %q", k, tm.ToolCallID, wantID)
		}
	}
}

func checkLLMs(t *testing.T, f fixture, llms []adapter.Case) {
	for i, c := range llms {
		if c.SpanName != f.llmSpan {
			t.Errorf("llm %d: SpanName = %q, want %q", i, c.SpanName, f.llmSpan)
		}
		if c.Model != responseModel {
			t.Errorf("llm %d: Model = %q, want %q", i, c.Model, responseModel)
		}
		if c.Provider != f.provider {
			t.Errorf("llm %d: Provider = %q, want %q", i, c.Provider, f.provider)
		}
		if c.AgentName != f.agentName {
			t.Errorf("llm %d: AgentName = %q, want %q", i, c.AgentName, f.agentName)
		}
		u, w := c.Usage, turnUsage[i]
		if !u.HasInputTokens || !u.HasOutputTokens || u.InputTokens != w[0] || u.OutputTokens != w[1] {
			t.Errorf("llm %d: Usage = %+v, want %d in, %d out", i, u, w[0], w[1])
		}
		if total, ok := u.Total(); !ok || total != w[2] {
			t.Errorf("llm %d: Total() = %d, %v, want %d", i, total, ok, w[2])
		}
		if u.HasTotalTokens != f.totalTokens {
			t.Errorf("llm %d: HasTotalTokens = %v, want %v", i, u.HasTotalTokens, f.totalTokens)
		}
		wantResp := ""
		if f.responseIDs {
			wantResp = f.responseID(i)
		}
		if c.ResponseID != wantResp {
			t.Errorf("llm %d: ResponseID = %q, want %q", i, c.ResponseID, wantResp)
		}
		checkToolDefs(t, f, c.ToolDefinitions)

		if !f.content {
			// instrumentation-openai: no content on the spans at all.
			if c.Input != "" || c.Output != "" || len(c.Messages) != 0 || len(c.ToolCalls) != 0 {
				t.Errorf("llm %d: content on a span that carries none: %q %q %d msgs %d calls",
					i, c.Input, c.Output, len(c.Messages), len(c.ToolCalls))
			}
			continue
		}
		if c.Input != userRequest {
			t.Errorf("llm %d: Input = %q", i, c.Input)
		}
		if c.SystemInstructions != systemPrompt {
			t.Errorf("llm %d: SystemInstructions = %q", i, c.SystemInstructions)
		}
		if i < 2 {
			// The model requested one tool call and gave no text.
			w := calls[i]
			wantID := w.id
			if !f.callIDs {
				wantID = ""
			}
			if c.Output != "" {
				t.Errorf("llm %d: Output = %q, want empty", i, c.Output)
			}
			if len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != w.name || c.ToolCalls[0].ID != wantID ||
				!sameJSON(t, c.ToolCalls[0].Arguments, w.args) || c.ToolCalls[0].HasResult {
				t.Errorf("llm %d: ToolCalls = %+v, want the requested %s(%s) id %q without result", i, c.ToolCalls, w.name, w.args, wantID)
			}
			if len(c.Messages) != 3+2*i {
				t.Errorf("llm %d: %d messages, want %d", i, len(c.Messages), 3+2*i)
			}
			continue
		}
		if c.Output != finalText {
			t.Errorf("llm %d: Output = %q, want the final text", i, c.Output)
		}
		if len(c.ToolCalls) != 0 {
			t.Errorf("llm %d: ToolCalls = %+v, want none", i, c.ToolCalls)
		}
		checkConversation(t, f, c.Messages)
	}
}
