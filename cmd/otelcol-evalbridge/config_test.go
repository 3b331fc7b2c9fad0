package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/evalbridge/evalbridge/processor/evalprocessor"
)

func TestArgsWithDefaultConfig(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		wantDefault bool
	}{
		{nil, true},
		{[]string{"--feature-gates", "-foo"}, true},
		{[]string{"--feature-gates=foo"}, true},
		{[]string{"--config", "c.yaml"}, false},
		{[]string{"--config=c.yaml"}, false},
		{[]string{"-config", "c.yaml"}, false},
		{[]string{"--set", "processors.batch.timeout=2s"}, false},
		{[]string{"--help"}, false},
		{[]string{"-h"}, false},
		{[]string{"--version"}, false},
		{[]string{"validate", "--config", "c.yaml"}, false},
		{[]string{"components"}, false},
	} {
		got, usedDefault := argsWithDefaultConfig(tc.args)
		if usedDefault != tc.wantDefault {
			t.Errorf("argsWithDefaultConfig(%q): used default = %v, want %v", tc.args, usedDefault, tc.wantDefault)
			continue
		}
		if !usedDefault {
			if !slices.Equal(got, tc.args) {
				t.Errorf("argsWithDefaultConfig(%q) = %q, want the arguments unchanged", tc.args, got)
			}
			continue
		}
		want := append(slices.Clone(tc.args), "--config", defaultConfigURI())
		if !slices.Equal(got, want) {
			t.Errorf("argsWithDefaultConfig(%q) = %q, want %q", tc.args, got, want)
		}
	}
	if !strings.HasPrefix(defaultConfigURI(), "yaml:") {
		t.Errorf("defaultConfigURI() = %.20q…, want a yaml: URI", defaultConfigURI())
	}
}

// TestEmbeddedDefaultConfig resolves the embedded config through the
// distribution's own settings and command line, as `go run
// ./cmd/otelcol-evalbridge` with no flags does, and validates it against the
// real factories.
func TestEmbeddedDefaultConfig(t *testing.T) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	args, usedDefault := argsWithDefaultConfig(nil)
	if !usedDefault || len(args) != 2 || args[0] != "--config" {
		t.Fatalf("argsWithDefaultConfig(nil) = %q, %v", args, usedDefault)
	}

	set := settings()
	set.ConfigProviderSettings.ResolverSettings.URIs = []string{args[1]}
	provider, err := otelcol.NewConfigProvider(set.ConfigProviderSettings)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := provider.Get(context.Background(), factories)
	if err != nil {
		t.Fatalf("resolving the embedded config: %v", err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatalf("the embedded config is invalid: %v", err)
	}

	otlp := cfg.Receivers[component.MustNewID("otlp")].(*otlpreceiver.Config)
	if got := otlp.Protocols.GRPC.Get().NetAddr.Endpoint; got != "localhost:4317" {
		t.Errorf("OTLP gRPC endpoint = %q, want localhost:4317", got)
	}
	if got := otlp.Protocols.HTTP.Get().ServerConfig.NetAddr.Endpoint; got != "localhost:4318" {
		t.Errorf("OTLP HTTP endpoint = %q, want localhost:4318", got)
	}
	eval := cfg.Processors[component.MustNewID("eval")].(*evalprocessor.Config)
	var types []string
	for _, e := range eval.Evaluators {
		types = append(types, e.Type)
	}
	slices.Sort(types)
	if want := []string{"tool_call_validity", "tool_efficiency", "tool_error", "tool_trajectory"}; !slices.Equal(types, want) {
		t.Errorf("embedded evaluators = %v, want %v", types, want)
	}
	traces := cfg.Service.Pipelines[pipeline.NewID(pipeline.SignalTraces)]
	if traces == nil {
		t.Fatal("the embedded config has no traces pipeline")
	}
	if got, want := ids(traces.Processors), []string{"memory_limiter", "eval", "batch"}; !slices.Equal(got, want) {
		t.Errorf("processors = %v, want %v", got, want)
	}
	if got, want := ids(traces.Exporters), []string{"debug"}; !slices.Equal(got, want) {
		t.Errorf("exporters = %v, want %v", got, want)
	}

	// The same file loads with the collector's own test helper, and the
	// collector accepts it in a dry run.
	if _, err := otelcoltest.LoadConfigAndValidate("default-config.yaml", factories); err != nil {
		t.Errorf("otelcoltest.LoadConfigAndValidate(default-config.yaml): %v", err)
	}
	set.ConfigProviderSettings.ResolverSettings.URIs = []string{args[1]}
	col, err := otelcol.NewCollector(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := col.DryRun(context.Background()); err != nil {
		t.Errorf("DryRun on the embedded config: %v", err)
	}
}

func ids(list []component.ID) []string {
	out := make([]string, len(list))
	for i, id := range list {
		out[i] = id.String()
	}
	return out
}

// TestExampleCollectorConfig loads examples/collector.yaml with the real
// factories, with and without the environment variables it reads.
func TestExampleCollectorConfig(t *testing.T) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "examples", "collector.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"defaults", nil},
		{"env", map[string]string{
			"BACKEND_ENDPOINT":      "https://otlp.example.com:4318",
			"OTLP_GRPC_ENDPOINT":    "0.0.0.0:4317",
			"OTLP_HTTP_ENDPOINT":    "0.0.0.0:4318",
			"HEALTH_CHECK_ENDPOINT": "0.0.0.0:13133",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"BACKEND_ENDPOINT", "OTLP_GRPC_ENDPOINT", "OTLP_HTTP_ENDPOINT", "HEALTH_CHECK_ENDPOINT"} {
				t.Setenv(k, tc.env[k])
				if tc.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			cfg, err := otelcoltest.LoadConfigAndValidate(path, factories)
			if err != nil {
				t.Fatalf("examples/collector.yaml: %v", err)
			}
			eval := cfg.Processors[component.MustNewID("eval")].(*evalprocessor.Config)
			var names []string
			for _, e := range eval.Evaluators {
				names = append(names, e.InstanceName())
			}
			if want := []string{"booking_flow", "tool_call_validity", "tool_error", "tool_efficiency"}; !slices.Equal(names, want) {
				t.Errorf("evaluators = %v, want %v", names, want)
			}
			backend := cfg.Exporters[component.MustNewID("otlp_http")].(*otlphttpexporter.Config)
			wantBackend := "http://localhost:14318"
			if tc.env["BACKEND_ENDPOINT"] != "" {
				wantBackend = tc.env["BACKEND_ENDPOINT"]
			}
			if backend.ClientConfig.Endpoint != wantBackend {
				t.Errorf("otlp_http endpoint = %q, want %q", backend.ClientConfig.Endpoint, wantBackend)
			}
			if len(cfg.Service.Extensions) != 1 || cfg.Service.Extensions[0].String() != "health_check" {
				t.Errorf("service extensions = %v, want [health_check]", cfg.Service.Extensions)
			}
		})
	}
}
