package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/evalbridge/evalbridge/internal/testkit"
)

// retyped decodes what a feedbackReceiver kept as T.
func retyped[T any](t *testing.T, maps []map[string]any) []T {
	b, err := json.Marshal(maps)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// firingGroups is the groups of the firing notifications, as
// "tenant/environment", sorted.
func firingGroups(notes []monitorNote) []string {
	var out []string
	for _, n := range notes {
		if n.State == "firing" {
			out = append(out, n.Group["tenant.id"]+"/"+n.Group["deployment.environment.name"])
		}
	}
	sort.Strings(out)
	return out
}

// TestStreamModeMonitorsGroupByTheEvaluatedSpan (docs/contract.md §26, §13,
// §9): in stream mode the webhook sees result spans, yet a monitor groups by
// the evaluated span's attributes (tenant.id on the agent span, the
// environment on its resource), and alerts and monitor samples name the
// evaluated span, not its result span.
// Hold mode, where the results are on the evaluated span, is the reference.
func TestStreamModeMonitorsGroupByTheEvaluatedSpan(t *testing.T) {
	for _, mode := range []string{"stream", "hold"} {
		t.Run(mode, func(t *testing.T) { monitorsGroupByTheEvaluatedSpan(t, mode) })
	}
}

func monitorsGroupByTheEvaluatedSpan(t *testing.T, mode string) {
	hook := &feedbackReceiver{t: t}
	snapshot := func() ([]shippedAlert, []monitorNote) {
		a, n := hook.got()
		return retyped[shippedAlert](t, a), retyped[monitorNote](t, n)
	}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	grpcAddr := freeAddr(t)
	startCollector(t, testkit.Config(t, "testdata/stream-monitors.yaml", map[string]string{"OTLP": grpcAddr, "Webhook": srv.URL, "Mode": mode}))

	ctx := context.Background()
	agents := map[string]string{} // agent span id -> name
	send := func(env, tenant string, fail bool, runs int) {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "concierge"), attribute.String("deployment.environment.name", env))))
		defer func() { _ = tp.Shutdown(ctx) }()
		tr := tp.Tracer("stream-monitors")
		for range runs {
			a := toolRun(ctx, tr, "concierge", fail, attribute.String("tenant.id", tenant))
			agents[a.SpanContext().SpanID().String()] = "invoke_agent concierge"
		}
	}
	// Two tenants in one environment: only the failing one may fire. A
	// failing tenant in another environment fires on its own.
	send("prod", "acme", true, 4)
	send("prod", "initech", false, 4)
	send("staging", "globex", true, 4)

	want := []string{"acme/prod", "globex/staging"}
	deadline := time.Now().Add(20 * time.Second)
	for len(firingGroups(func() []monitorNote { _, n := snapshot(); return n }())) < len(want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	alerts, notes := snapshot()
	if got := firingGroups(notes); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("firing groups %v, want %v (notifications %+v)", got, want, notes)
	}
	for _, n := range notes {
		if len(n.SampleURLs) == 0 {
			t.Errorf("%s firing with no sample", n.Group)
		}
		for _, s := range n.SampleURLs {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			if id := u.Query().Get("span"); agents[id] == "" {
				t.Errorf("monitor sample %s names span %s, not an evaluated (agent) span", s, id)
			}
		}
	}
	// Per-result alerts: one per failed run, each naming its agent span.
	waitFor(t, 20*time.Second, "an alert per failed run", func() bool { a, _ := snapshot(); return len(a) >= 8 })
	alerts, _ = snapshot()
	for _, a := range alerts {
		if name, ok := agents[a.SpanID]; !ok || name != a.SpanName {
			t.Errorf("alert names span %s %q, want an agent span by its own name (%q)", a.SpanID, a.SpanName, name)
		}
	}
	if len(alerts) != 8 {
		t.Errorf("%d alerts, want one per failed run (8)", len(alerts))
	}
}
