package main

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"

	"github.com/evalbridge/evalbridge/internal/defaultconfig"
)

var updateImageConfig = flag.Bool("update", false, "rewrite deploy/image/config.yaml, deploy/packaging/config.yaml and internal/defaultconfig/default-config.yaml from default-config.yaml")

const (
	imageConfigPath   = "../../deploy/image/config.yaml"
	packageConfigPath = "../../deploy/packaging/config.yaml"
	regenerate        = "go test ./cmd/otelcol-evalbridge -run 'TestImageConfig|TestPackageConfig|TestDefaultConfigCopies' -update"
)

const imageConfigHeader = `# The default configuration of the otelcol-evalbridge container image, at
# /etc/otelcol-evalbridge/config.yaml (the image's CMD names it): the embedded
# default's pipelines (cmd/otelcol-evalbridge/default-config.yaml), listening
# on 0.0.0.0, with health_check on 13133 for liveness and readiness probes,
# the collector's own telemetry on 0.0.0.0:8888, and the debug exporter at
# verbosity basic (counts, no span content: prompts stay out of the pod log).
# To send the scored spans to a backend, run your own config (docs/deploy.md).
#
# Generated; do not edit. After changing default-config.yaml run
#   ` + regenerate + `
`

const packageConfigHeader = `# The default configuration of the otelcol-evalbridge deb and rpm packages,
# /etc/otelcol-evalbridge/config.yaml (a conffile): the embedded default's
# pipelines (cmd/otelcol-evalbridge/default-config.yaml) on localhost, the
# evaluation metrics on localhost:8889, the collector's own telemetry on
# localhost:8888, and the debug exporter at verbosity basic (counts, no span
# content: prompts stay out of the journal). docs/deploy.md shows how to send
# the scored spans to a backend.
#
# Generated; do not edit. After changing default-config.yaml run
#   ` + regenerate + `
`

// shippedConfigText derives a shipped config from the embedded default, as text
// so that its comments stay: the debug exporter at verbosity basic (the
// embedded default prints every span for the quickstart; a shipped config
// must not print span content), and a telemetry reader on host:8888.
func shippedConfigText(t *testing.T, header, def, host string) string {
	lines := strings.SplitAfter(def, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") { // the default's own header
		lines = lines[1:]
	}
	body := strings.Join(lines, "")
	if !strings.Contains(body, "verbosity: detailed") {
		t.Fatal("default-config.yaml has no `verbosity: detailed`: update shippedConfig")
	}
	body = strings.Replace(body, "verbosity: detailed", "verbosity: basic", 1)
	telemetry := "\nservice:\n  telemetry:\n    metrics:\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n" +
		"                host: " + host + "\n                port: 8888\n"
	body = strings.Replace(body, "\nservice:\n", telemetry, 1)
	return header + "\n" + body
}

// imageConfigFromDefault is shippedConfigText on every interface instead of
// loopback, with the health_check extension on 0.0.0.0:13133.
func imageConfigFromDefault(t *testing.T, def string) string {
	body := strings.TrimPrefix(shippedConfigText(t, "", def, "0.0.0.0"), "\n")
	body = strings.NewReplacer("localhost:", "0.0.0.0:", "127.0.0.1:", "0.0.0.0:").Replace(body)
	body = strings.Replace(body, "\nservice:\n", "\nservice:\n  extensions: [health_check]\n", 1)
	return imageConfigHeader + "\nextensions:\n  health_check:\n    endpoint: 0.0.0.0:13133\n\n" + body
}

// shippedWant is the embedded default as a shipped config must differ
// from it, compared as configuration.
func shippedWant(t *testing.T, host string) map[string]any {
	want := yamlMap(t, []byte(defaultConfig))
	want["exporters"].(map[string]any)["debug"].(map[string]any)["verbosity"] = "basic"
	want["service"].(map[string]any)["telemetry"] = map[string]any{"metrics": map[string]any{"readers": []any{
		map[string]any{"pull": map[string]any{"exporter": map[string]any{"prometheus": map[string]any{"host": host, "port": 8888}}}}}}}
	return want
}

// TestImageConfig keeps deploy/image/config.yaml the embedded default's
// pipelines on 0.0.0.0 with health_check, telemetry on 0.0.0.0:8888 and
// debug at basic, compared as configuration (not text), and validates it
// against the distribution's factories.
func TestImageConfig(t *testing.T) {
	if *updateImageConfig {
		if err := os.WriteFile(imageConfigPath, []byte(imageConfigFromDefault(t, defaultConfig)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(imageConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	got := yamlMap(t, raw)

	want := rewriteLoopback(shippedWant(t, "0.0.0.0")).(map[string]any)
	if _, ok := want["extensions"]; ok {
		t.Fatal("default-config.yaml has extensions: extend imageConfigFromDefault to merge health_check into them")
	}
	want["extensions"] = map[string]any{"health_check": map[string]any{"endpoint": "0.0.0.0:13133"}}
	want["service"].(map[string]any)["extensions"] = []any{"health_check"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/image/config.yaml is not the embedded default on 0.0.0.0 with health_check:\n got  %v\n want %v\nrun: %s", got, want, regenerate)
	}
	if strings.Contains(string(raw), "localhost") {
		t.Error("deploy/image/config.yaml still names localhost: in a container nothing outside the pod could reach it")
	}
	validateShipped(t, imageConfigPath)
}

// TestPackageConfig keeps deploy/packaging/config.yaml (the deb and rpm
// packages' /etc/otelcol-evalbridge/config.yaml) the embedded default with
// telemetry on localhost:8888 and debug at basic.
func TestPackageConfig(t *testing.T) {
	if *updateImageConfig {
		if err := os.WriteFile(packageConfigPath, []byte(shippedConfigText(t, packageConfigHeader, defaultConfig, "localhost")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(packageConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := yamlMap(t, raw), shippedWant(t, "localhost"); !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/packaging/config.yaml is not the embedded default with telemetry and debug at basic:\n got  %v\n want %v\nrun: %s", got, want, regenerate)
	}
	validateShipped(t, packageConfigPath)
}

// validateShipped loads path with the distribution's factories, and checks
// what every shipped config must hold (contract §22): no debug exporter
// printing span content, evalmetrics into the prometheus exporter.
func validateShipped(t *testing.T, path string) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otelcoltest.LoadConfigAndValidate(path, factories); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conf := yamlMap(t, raw)
	exporters, _ := conf["exporters"].(map[string]any)
	for id, e := range exporters {
		if strings.HasPrefix(id, "debug") {
			if v, _ := e.(map[string]any)["verbosity"].(string); v != "" && v != "basic" {
				t.Errorf("%s: exporter %s at verbosity %s prints span content", path, id, v)
			}
		}
	}
	if _, ok := exporters["prometheus"]; !ok {
		t.Errorf("%s: no prometheus exporter for the evaluation metrics", path)
	}
}

func yamlMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := r.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		t.Fatalf("not a YAML map: %T", raw)
	}
	return m
}

func rewriteLoopback(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = rewriteLoopback(e)
		}
	case []any:
		for i, e := range v {
			v[i] = rewriteLoopback(e)
		}
	case string:
		return strings.NewReplacer("localhost:", "0.0.0.0:", "127.0.0.1:", "0.0.0.0:").Replace(v)
	}
	return v
}

// TestDefaultConfigCopies keeps internal/defaultconfig's copy (the ocb
// build's default config) equal to the embedded default.
func TestDefaultConfigCopies(t *testing.T) {
	const path = "../../internal/defaultconfig/default-config.yaml"
	if *updateImageConfig {
		if err := os.WriteFile(path, []byte(defaultConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if defaultconfig.YAML != defaultConfig {
		t.Errorf("%s differs from default-config.yaml; run: %s", path, regenerate)
	}
}
