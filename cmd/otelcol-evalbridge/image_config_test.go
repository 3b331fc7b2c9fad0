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

var updateImageConfig = flag.Bool("update", false, "rewrite deploy/image/config.yaml and internal/defaultconfig/default-config.yaml from default-config.yaml")

const imageConfigPath = "../../deploy/image/config.yaml"

const imageConfigHeader = `# The default configuration of the otelcol-evalbridge container image, at
# /etc/otelcol-evalbridge/config.yaml (the image's CMD names it): the embedded
# default's pipelines (cmd/otelcol-evalbridge/default-config.yaml), listening
# on 0.0.0.0, with health_check on 13133 for liveness and readiness probes.
#
# Generated; do not edit. After changing default-config.yaml run
#   go test ./cmd/otelcol-evalbridge -run 'TestImageConfig|TestDefaultConfigCopies' -update
`

// imageConfigFromDefault derives the image's config from the embedded
// default, as text so that its comments stay: endpoints on every interface
// instead of loopback, and the health_check extension on 0.0.0.0:13133.
func imageConfigFromDefault(def string) string {
	lines := strings.SplitAfter(def, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") { // the default's own header
		lines = lines[1:]
	}
	body := strings.Join(lines, "")
	body = strings.NewReplacer("localhost:", "0.0.0.0:", "127.0.0.1:", "0.0.0.0:").Replace(body)
	body = strings.Replace(body, "\nservice:\n", "\nservice:\n  extensions: [health_check]\n", 1)
	return imageConfigHeader + "\nextensions:\n  health_check:\n    endpoint: 0.0.0.0:13133\n\n" + body
}

// TestImageConfig keeps deploy/image/config.yaml the embedded default's
// pipelines on 0.0.0.0 with health_check, compared as configuration (not
// text), and validates it against the distribution's factories.
func TestImageConfig(t *testing.T) {
	if *updateImageConfig {
		if err := os.WriteFile(imageConfigPath, []byte(imageConfigFromDefault(defaultConfig)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(imageConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	got := yamlMap(t, raw)

	want := yamlMap(t, []byte(defaultConfig))
	want = rewriteLoopback(want).(map[string]any)
	if _, ok := want["extensions"]; ok {
		t.Fatal("default-config.yaml has extensions: extend imageConfigFromDefault to merge health_check into them")
	}
	want["extensions"] = map[string]any{"health_check": map[string]any{"endpoint": "0.0.0.0:13133"}}
	want["service"].(map[string]any)["extensions"] = []any{"health_check"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/image/config.yaml is not the embedded default on 0.0.0.0 with health_check:\n got  %v\n want %v\n"+
			"run: go test ./cmd/otelcol-evalbridge -run 'TestImageConfig|TestDefaultConfigCopies' -update", got, want)
	}
	if strings.Contains(string(raw), "localhost") {
		t.Error("deploy/image/config.yaml still names localhost: in a container nothing outside the pod could reach it")
	}

	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otelcoltest.LoadConfigAndValidate(imageConfigPath, factories); err != nil {
		t.Errorf("deploy/image/config.yaml: %v", err)
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
		t.Errorf("%s differs from default-config.yaml; run: go test ./cmd/otelcol-evalbridge -run 'TestImageConfig|TestDefaultConfigCopies' -update", path)
	}
}
