// Package interop checks the adapter against spans written by real
// instrumentation libraries. The fixtures in testdata/ are OTLP/JSON export
// requests produced by interop/node (see README.md); the tests need no Node.
package interop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/testkit"
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

// turn is one model call: the tool calls it requested (none: the final
// text) and its input, output and total tokens.
type turn struct {
	calls []call
	usage [3]int64
}

// script is a scripted run (interop/node/lib/server.mjs, INTEROP_SCENARIO).
type script struct {
	name  string
	turns []turn
}

var (
	// sequential: one tool call per model turn.
	sequential = script{"sequential", []turn{
		{calls[:1], [3]int64{142, 31, 173}},
		{calls[1:], [3]int64{221, 24, 245}},
		{nil, [3]int64{268, 46, 314}},
	}}
	// parallel: both calls in the first turn, run at once (their tool
	// spans share a start time in the fixtures; see TestParallelFixturesTie).
	parallel = script{"parallel", []turn{
		{calls, [3]int64{142, 55, 197}},
		{nil, [3]int64{284, 46, 330}},
	}}
)

// usage is the run's summed token counts.
func (s script) usage() (u [3]int64) {
	for _, t := range s.turns {
		for k := range u {
			u[k] += t.usage[k]
		}
	}
	return u
}

// inputMessages is how many messages model call i receives (system, user,
// then per earlier turn the assistant message and one tool message per
// call).
func (s script) inputMessages(i int) int {
	n := 2
	for _, t := range s.turns[:i] {
		n += 1 + len(t.calls)
	}
	return n
}

// fixture is what one library's spans carry, and so what the cases must hold.
type fixture struct {
	file   string
	script script

	agentSpan  string
	agentName  string
	agentModel string
	llmModel   string // "" means responseModel
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

// libraries are the fixtures of the sequential script; each library also
// has a <name>-parallel.json capture of the parallel script.
var libraries = []fixture{
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
		// No content on the spans: it is in the log records, joined.
		content: true, callIDs: true, toolDefs: false, responseIDs: true, totalTokens: false,
		assistantCallsInHistory: true,
		logs:                    "otel-instrumentation-openai.logs.json",
	},
	{
		// ai 5.0.277 with @ai-sdk/openai 2.0.131 (chat API), experimental_telemetry;
		// gen_ai.system / ai.model.provider "openai.chat" is the provider openai.
		file:      "vercel-ai-v5.json",
		agentSpan: "ai.generateText", agentName: "travel-agent", // ai.telemetry.functionId
		agentModel: "gpt-4o-mini", provider: "openai", llmSpan: "ai.generateText.doGenerate",
		content: true, callIDs: true, toolDefs: true, responseIDs: true, totalTokens: false,
		assistantCallsInHistory: true,
	},
	{
		// @langchain/langgraph 1.7.3 createReactAgent, @langchain/core 1.4.0,
		// @langchain/openai 1.5.8 ChatOpenAI, traced by
		// @arizeai/openinference-instrumentation-langchain 4.1.1: a CHAIN root
		// named after the agent, graph-plumbing chains, no AGENT span; call ids
		// only in input.value / output.value; llm.model_name is the request
		// model; the provider only in metadata (ls_provider).
		file:      "langchain.json",
		agentSpan: "travel-agent", agentName: "travel-agent",
		agentModel: "gpt-4o-mini", llmModel: "gpt-4o-mini", provider: "openai", llmSpan: "ChatOpenAI",
		content: true, callIDs: true, toolDefs: true, responseIDs: false, totalTokens: true,
		assistantCallsInHistory: true,
	},
}

// responsesAPI is @opentelemetry/instrumentation-openai on openai
// 6.49.0's Responses API (semconv 1.38: two
// gen_ai.client.inference.operation.details records per call), sequential
// script only.
var responsesAPI = fixture{
	file:      "otel-instrumentation-openai-responses.json",
	agentSpan: "invoke_agent travel-agent", agentName: "travel-agent",
	agentModel: "gpt-4o-mini", provider: "openai", llmSpan: "chat gpt-4o-mini",
	content: true, callIDs: true, toolDefs: false, responseIDs: true, totalTokens: false,
	assistantCallsInHistory: true,
	logs:                    "otel-instrumentation-openai-responses.logs.json", respPrefix: "resp_interop_",
	script: sequential,
}

// fixtures are every library in both scripts, and the Responses API run.
var fixtures = func() []fixture {
	var out []fixture
	for _, f := range libraries {
		f.script = sequential
		out = append(out, f)
		f.script = parallel
		f.file = strings.TrimSuffix(f.file, ".json") + "-parallel.json"
		if f.logs != "" {
			f.logs = strings.TrimSuffix(f.logs, ".logs.json") + "-parallel.logs.json"
		}
		out = append(out, f)
	}
	return append(out, responsesAPI)
}()

func decode(t *testing.T, file string) ptrace.Traces { return testkit.ReadTraces(t, file) }

// load adapts a fixture's trace, joined with its content log records
// when the library writes content there.
func load(t *testing.T, f fixture) []adapter.Case {
	t.Helper()
	return adaptFixture(t, f, decode(t, filepath.Join("testdata", f.file)))
}

// adaptFixture adapts td (a fixture's trace, possibly altered), joined with
// f's content log records when it has some.
func adaptFixture(t *testing.T, f fixture, td ptrace.Traces) []adapter.Case {
	t.Helper()
	if f.logs == "" {
		return adapt(t, td)
	}
	return adaptJoined(t, td, filepath.Join("testdata", "logs", f.logs))
}

// adaptJoined adapts the one trace of td joined with the content log
// records in the OTLP/JSON logs file at logsPath.
func adaptJoined(t *testing.T, td ptrace.Traces, logsPath string) []adapter.Case {
	t.Helper()
	records := adapter.GroupLogsByTrace(testkit.ReadLogs(t, logsPath))
	traces := adapter.GroupByTrace(td)
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	for id, spans := range traces {
		if n := adapter.JoinEvents(spans, records[id]); n != 0 || len(records[id]) == 0 {
			t.Fatalf("%s: %d records, %d joined to no span", logsPath, len(records[id]), n)
		}
		cases, problems := adapter.Adapt(spans)
		if len(problems) > 0 {
			t.Errorf("problems: %q", problems)
		}
		return cases
	}
	return nil
}

// adapt adapts the one trace of td.
func adapt(t *testing.T, td ptrace.Traces) []adapter.Case {
	t.Helper()
	traces := adapter.GroupByTrace(td)
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	for _, spans := range traces {
		cases, problems := adapter.Adapt(spans)
		if len(problems) > 0 {
			t.Errorf("problems: %q", problems)
		}
		return cases
	}
	return nil
}

func split(t *testing.T, s script, cases []adapter.Case) (agent adapter.Case, llms []adapter.Case) {
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
	if len(agents) != 1 || len(llms) != len(s.turns) {
		t.Fatalf("%d agent and %d llm cases, want 1 and %d", len(agents), len(llms), len(s.turns))
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
			agent, llms := split(t, f.script, load(t, f))
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
	if f.responseIDs && c.ResponseID != f.responseID(len(f.script.turns)-1) {
		t.Errorf("ResponseID = %q, want the last model call's", c.ResponseID)
	}
	if c.Latency <= 0 {
		t.Errorf("Latency = %v", c.Latency)
	}

	// Tool calls: from the tool spans, in the order the model requested
	// them (in the parallel fixtures the tool spans tie on start time and
	// the second call ends first), arguments decoded as objects.
	if len(c.ToolCalls) != len(calls) {
		t.Fatalf("%d tool calls, want %d: %+v", len(c.ToolCalls), len(calls), c.ToolCalls)
	}
	t.Run("order", func(t *testing.T) {
		var got []string
		for _, g := range c.ToolCalls {
			got = append(got, g.Name)
		}
		if want := []string{calls[0].name, calls[1].name}; !slices.Equal(got, want) {
			t.Errorf("tool calls in order %v, want %v", got, want)
		}
	})
	for _, w := range calls {
		i := slices.IndexFunc(c.ToolCalls, func(g adapter.ToolCall) bool { return g.Name == w.name })
		if i < 0 {
			t.Errorf("no %s call", w.name)
			continue
		}
		g := c.ToolCalls[i]
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

	// Token usage of the run: the sum of the model calls.
	t.Run("usage", func(t *testing.T) {
		u, w := c.Usage, f.script.usage()
		// ai 5 puts the LAST step's usage on its ai.generateText span; the
		// run's usage is the sum of the model calls.
		if u.InputTokens != w[0] || u.OutputTokens != w[1] || !u.HasInputTokens || !u.HasOutputTokens {
			t.Errorf("Usage = %+v, want input %d, output %d", u, w[0], w[1])
		}
		if total, ok := u.Total(); !ok || total != w[2] {
			t.Errorf("Usage.Total() = %d, %v, want %d", total, ok, w[2])
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
	want := []string{"system", "user"}
	for _, tn := range f.script.turns {
		want = append(want, "assistant")
		for range tn.calls {
			want = append(want, "tool")
		}
	}
	if !slices.Equal(roles, want) {
		t.Fatalf("message roles = %v, want %v", roles, want)
	}
	last := len(msgs) - 1
	if msgs[0].Content != systemPrompt || msgs[1].Content != userRequest || msgs[last].Content != finalText {
		t.Errorf("system/user/final contents = %q / %q / %q", msgs[0].Content, msgs[1].Content, msgs[last].Content)
	}
	at := 2
	for k, tn := range f.script.turns[:len(f.script.turns)-1] {
		a := msgs[at]
		if a.Content != "" {
			t.Errorf("assistant turn %d: Content = %q, want empty (it only called tools)", k, a.Content)
		}
		if f.assistantCallsInHistory {
			checkRequested(t, fmt.Sprintf("assistant turn %d", k), a.ToolCalls, tn.calls, true)
		} else if len(a.ToolCalls) != 0 {
			t.Errorf("assistant turn %d: ToolCalls = %+v, want none (not recorded)", k, a.ToolCalls)
		}
		for n, w := range tn.calls {
			tm := msgs[at+1+n]
			if tm.Content != w.result {
				t.Errorf("tool message %s: Content = %q, want %q", w.name, tm.Content, w.result)
			}
			wantID := w.id
			if !f.callIDs {
				wantID = ""
			}
			if tm.ToolCallID != wantID {
				t.Errorf("tool message %s: ToolCallID = %q, want %q", w.name, tm.ToolCallID, wantID)
			}
		}
		at += 1 + len(tn.calls)
	}
}

// checkRequested checks the calls a model turn requested.
func checkRequested(t *testing.T, what string, got []adapter.ToolCall, want []call, ids bool) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := got[i], want[i]
		wantID := w.id
		if !ids {
			wantID = ""
		}
		ok = g.Name == w.name && g.ID == wantID && sameJSON(t, g.Arguments, w.args) && !g.HasResult
	}
	if !ok {
		t.Errorf("%s: ToolCalls = %+v, want %v (ids %v) without results", what, got, want, ids)
	}
}

func checkLLMs(t *testing.T, f fixture, llms []adapter.Case) {
	wantModel := f.llmModel
	if wantModel == "" {
		wantModel = responseModel
	}
	for i, c := range llms {
		tn := f.script.turns[i]
		if c.SpanName != f.llmSpan {
			t.Errorf("llm %d: SpanName = %q, want %q", i, c.SpanName, f.llmSpan)
		}
		if c.Model != wantModel {
			t.Errorf("llm %d: Model = %q, want %q", i, c.Model, wantModel)
		}
		if c.Provider != f.provider {
			t.Errorf("llm %d: Provider = %q, want %q", i, c.Provider, f.provider)
		}
		if c.AgentName != f.agentName {
			t.Errorf("llm %d: AgentName = %q, want %q", i, c.AgentName, f.agentName)
		}
		u, w := c.Usage, tn.usage
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
		if len(tn.calls) > 0 {
			// The model requested tool calls and gave no text.
			if c.Output != "" {
				t.Errorf("llm %d: Output = %q, want empty", i, c.Output)
			}
			checkRequested(t, fmt.Sprintf("llm %d", i), c.ToolCalls, tn.calls, f.callIDs)
			if want := f.script.inputMessages(i) + 1; len(c.Messages) != want {
				t.Errorf("llm %d: %d messages, want %d", i, len(c.Messages), want)
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
