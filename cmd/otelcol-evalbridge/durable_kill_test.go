package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// collectorProc is the built distribution running as a process of its own.
type collectorProc struct {
	cmd    *exec.Cmd
	stderr *testkit.LockedBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, once done
}

func runCollectorProc(t *testing.T, bin, config, health string) *collectorProc {
	t.Helper()
	cmd := exec.Command(bin, "--config", config)
	p := &collectorProc{cmd: cmd, stderr: &testkit.LockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	// Ready once the OTLP receiver answers.
	waitFor(t, 60*time.Second, "collector listening", func() bool {
		select {
		case <-p.done:
			t.Fatalf("collector exited while starting: %v\n%s", p.err, p.stderr)
		default:
		}
		resp, err := http.Post(health, "application/x-protobuf", bytes.NewReader(emptyTraces()))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

func emptyTraces() []byte {
	b, _ := ptraceotlp.NewExportRequest().MarshalProto()
	return b
}

// killResource is the resource every request of the test is sent under.
func killResource(m pcommon.Map) {
	m.PutStr("service.name", "kill-test")
	m.PutStr("service.version", "1.2.3")
	m.PutStr("host.name", "node-7")
}

// killTrace is agent trace i: an invoke_agent root and three tool calls
// (the last failed), split into two requests, and one GenAI content log
// record.
func killTrace(i int) (first, second ptrace.Traces, ld plog.Logs) {
	id := pcommon.TraceID{0xd0, byte(i >> 8), byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	span := func(td ptrace.Traces, n byte, name string, attrs map[string]any) {
		if td.ResourceSpans().Len() == 0 {
			rs := td.ResourceSpans().AppendEmpty()
			killResource(rs.Resource().Attributes())
			rs.ScopeSpans().AppendEmpty().Scope().SetName("kill-test")
		}
		s := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
		s.SetTraceID(id)
		s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, byte(i), n})
		if n != 1 {
			s.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, byte(i), 1})
		}
		s.SetName(name)
		now := time.Now()
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
		_ = s.Attributes().FromRaw(attrs)
		if n == 4 {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	tool := func(name string) map[string]any {
		return map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
	}
	first, second = ptrace.NewTraces(), ptrace.NewTraces()
	span(first, 2, "execute_tool search", tool("search"))
	span(first, 3, "execute_tool book", tool("book"))
	span(second, 4, "execute_tool pay", tool("pay"))
	span(second, 1, "invoke_agent travel", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"})
	ld = plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTraceID(id)
	lr.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, byte(i), 2})
	lr.Attributes().PutStr("event.name", "gen_ai.user.message")
	lr.Body().SetEmptyMap().PutStr("content", fmt.Sprintf("run %d", i))
	return first, second, ld
}

func post(url string, body []byte) error {
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

// The built distribution with `storage: file_storage/eval` is killed with
// SIGKILL while it holds acknowledged spans and log records; restarted on
// the same directory, it delivers every one of them, scored. In stream
// mode (§26) the spans went on before the kill; restarted, it scores what
// it kept and emits the results, and sends no original span again.
func TestSIGKILLLosesNothingWithStorage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the collector as a process")
	}
	bin := filepath.Join(t.TempDir(), "otelcol-evalbridge")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("hold", func(t *testing.T) { sigkillHold(t, bin) })
	t.Run("stream", func(t *testing.T) { sigkillStream(t, bin) })
}

// startSIGKILLCollector writes testdata/sigkill.yaml for mode and starts
// the collector on it; it returns the backend, the OTLP base URL and the
// config (to restart it with).
func startSIGKILLCollector(t *testing.T, bin, mode string) (be *testkit.Sink, base, config string, c *collectorProc) {
	t.Helper()
	dir := t.TempDir()
	be = testkit.NewSink(t)
	addr := freeAddr(t)
	config = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(testkit.Config(t, "testdata/sigkill.yaml", map[string]string{"OTLP": addr, "Backend": be.URL, "Storage": filepath.Join(dir, "storage"), "Mode": mode})), 0o600); err != nil {
		t.Fatal(err)
	}
	base = "http://" + addr
	return be, base, config, runCollectorProc(t, bin, config, base+"/v1/traces")
}

// sendKillTraces sends killTrace 0..traces-1 as an SDK sends them: the
// first parts of three traces in one request, under one resource (the
// collector holds them in chunks that share a copy of it, and persists
// them so), then their second parts; each trace's content record before.
func sendKillTraces(t *testing.T, base string, traces int) {
	t.Helper()
	const perRequest = 3
	for i := 0; i < traces; i += perRequest {
		firsts, seconds := ptrace.NewTraces(), ptrace.NewTraces()
		for j := i; j < i+perRequest; j++ {
			first, second, ld := killTrace(j)
			for _, p := range [][2]ptrace.Traces{{first, firsts}, {second, seconds}} {
				into := p[1]
				if into.ResourceSpans().Len() == 0 {
					p[0].ResourceSpans().MoveAndAppendTo(into.ResourceSpans())
					continue
				}
				p[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().MoveAndAppendTo(into.ResourceSpans().At(0).ScopeSpans().At(0).Spans())
			}
			b, _ := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
			if err := post(base+"/v1/logs", b); err != nil {
				t.Fatal(err)
			}
		}
		for _, td := range []ptrace.Traces{firsts, seconds} {
			b, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			if err := post(base+"/v1/traces", b); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func sigkillHold(t *testing.T, bin string) {
	be, base, config, c1 := startSIGKILLCollector(t, bin, "hold")
	const traces = 30
	sendKillTraces(t, base, traces)

	// Every request above was acknowledged (200). Kill while they are held.
	before := spanIDs(be)
	if err := c1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c1.done
	if len(before) == traces*4 {
		t.Skip("the machine was so slow that every trace was released before the kill; nothing was held to lose")
	}
	t.Logf("at the kill: %d of %d spans had reached the backend", len(before), traces*4)

	c2 := runCollectorProc(t, bin, config, base+"/v1/traces")
	waitFor(t, 60*time.Second, "every acknowledged span at the backend", func() bool {
		return len(spanIDs(be)) == traces*4
	})
	waitFor(t, 30*time.Second, "every acknowledged log record at the backend", func() bool {
		return contentRecords(be) >= traces
	})
	if !strings.Contains(c2.stderr.String(), "restored held traces from storage") {
		t.Errorf("no restore logged:\n%s", c2.stderr)
	}
	dups := 0
	for _, n := range spanIDs(be) {
		dups += n - 1
	}
	t.Logf("spans sent %d, lost 0, duplicates %d (released and in flight at the kill: at-least-once)", traces*4, dups)
	want := pcommon.NewMap()
	killResource(want)
	for _, td := range be.Traces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			if got := td.ResourceSpans().At(i).Resource().Attributes(); !got.Equal(want) {
				t.Errorf("spans at the backend under resource %v, sent under %v", got.AsRaw(), want.AsRaw())
			}
		}
	}
	for i := 0; i < traces; i++ {
		first, _, _ := killTrace(i)
		id := first.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
		root, ok := spansOf(be, id.String())["invoke_agent travel "+pcommon.SpanID{0, 0, 0, 0, 0, 0, byte(i), 1}.String()]
		if !ok {
			t.Fatalf("trace %d: no root span", i)
		}
		if v, ok := root.Attributes().Get("eval.tool_error.status"); !ok || v.Str() != "failed" {
			t.Errorf("trace %d: root not scored as failed: %v", i, root.Attributes().AsRaw())
		}
	}
	if err := c2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-c2.done
	if c2.err != nil {
		t.Errorf("collector exit after SIGINT: %v\n%s", c2.err, c2.stderr)
	}
}

func sigkillStream(t *testing.T, bin string) {
	be, base, config, c1 := startSIGKILLCollector(t, bin, "stream")
	const traces = 30
	sendKillTraces(t, base, traces)
	// Every request above was acknowledged (200) once its spans had gone on
	// (the exporter has no queue) and what eval keeps of them was stored.
	if n := len(spanIDs(be)); n != traces*4 {
		t.Fatalf("at the kill: %d of %d spans at the backend; stream mode forwards them in the call", n, traces*4)
	}
	resultsBefore := len(resultSpansAt(be))
	if err := c1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c1.done
	if resultsBefore == traces {
		t.Skip("the machine was so slow that every trace was scored before the kill; nothing was kept to lose")
	}
	t.Logf("at the kill: %d of %d traces had their results", resultsBefore, traces)

	c2 := runCollectorProc(t, bin, config, base+"/v1/traces")
	waitFor(t, 60*time.Second, "a result span for every trace", func() bool {
		return len(resultSpansAt(be)) >= traces
	})
	if !strings.Contains(c2.stderr.String(), "restored held traces from storage") {
		t.Errorf("no restore logged:\n%s", c2.stderr)
	}
	time.Sleep(4 * time.Second) // more than `wait`: a second result, were there one, would come
	results := resultSpansAt(be)
	for i := 0; i < traces; i++ {
		first, _, _ := killTrace(i)
		id := first.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
		rs := results[id]
		if len(rs) != 1 {
			t.Errorf("trace %d: %d result spans, want 1", i, len(rs))
			continue
		}
		if v, ok := rs[0].Attributes().Get("eval.tool_error.status"); !ok || v.Str() != "failed" ||
			rs[0].ParentSpanID() != (pcommon.SpanID{0, 0, 0, 0, 0, 0, byte(i), 1}) {
			t.Errorf("trace %d: want a result span under the agent span with tool_error failed; got parent %v, %v", i, rs[0].ParentSpanID(), rs[0].Attributes().AsRaw())
		}
	}
	originals := map[[24]byte]int{}
	for _, s := range be.Spans() {
		if _, ok := s.Attributes().Get("eval.generated"); !ok {
			var key [24]byte
			tid, sid := s.TraceID(), s.SpanID()
			copy(key[:16], tid[:])
			copy(key[16:], sid[:])
			originals[key]++
		}
	}
	if len(originals) != traces*4 {
		t.Errorf("%d distinct original spans at the backend, sent %d", len(originals), traces*4)
	}
	for k, n := range originals {
		if n != 1 {
			t.Errorf("span %x at the backend %d times: an original span was sent again", k, n)
		}
	}
	if n := contentRecords(be); n != traces {
		t.Errorf("%d content records at the backend, sent %d", n, traces)
	}
	if err := c2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-c2.done
	if c2.err != nil {
		t.Errorf("collector exit after SIGINT: %v\n%s", c2.err, c2.stderr)
	}
}

// resultSpansAt is the result spans (eval.generated) the backend got, by
// trace.
func resultSpansAt(b *testkit.Sink) map[pcommon.TraceID][]ptrace.Span {
	out := map[pcommon.TraceID][]ptrace.Span{}
	for _, s := range b.Spans() {
		if v, ok := s.Attributes().Get("eval.generated"); ok && v.Bool() {
			out[s.TraceID()] = append(out[s.TraceID()], s)
		}
	}
	return out
}

// spanIDs counts the spans the backend got, by trace and span id.
func spanIDs(b *testkit.Sink) map[[24]byte]int {
	out := map[[24]byte]int{}
	for _, s := range b.Spans() {
		var key [24]byte
		tid, sid := s.TraceID(), s.SpanID()
		copy(key[:16], tid[:])
		copy(key[16:], sid[:])
		out[key]++
	}
	return out
}

// contentRecords counts the gen_ai.user.message records the backend got.
func contentRecords(b *testkit.Sink) int {
	n := 0
	for _, ld := range b.Logs() {
		testkit.ForEachLogRecord(ld, func(lr plog.LogRecord) {
			if v, ok := lr.Attributes().Get("event.name"); ok && v.Str() == "gen_ai.user.message" {
				n++
			}
		})
	}
	return n
}
