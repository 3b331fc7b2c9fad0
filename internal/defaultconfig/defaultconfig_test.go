package defaultconfig

import (
	"context"
	"os"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/confmap"
)

func TestProviderResolvesTheDefault(t *testing.T) {
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{URI},
		ProviderFactories: []confmap.ProviderFactory{NewFactory()},
	})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := r.Resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, err := confmap.NewRetrievedFromYAML([]byte(YAML))
	if err != nil {
		t.Fatal(err)
	}
	wantRaw, _ := want.AsRaw()
	if !confmap.NewFromStringMap(wantRaw.(map[string]any)).IsSet("service::pipelines::traces") || !conf.IsSet("service::pipelines::traces") {
		t.Fatal("the default config has no traces pipeline")
	}
	if _, err := (provider{}).Retrieve(context.Background(), Scheme+":other", nil); err == nil {
		t.Error("Retrieve(evalbridge:other) succeeded, want an error")
	}
}

// TestWithDefault: the command line ocb's generated main runs with once it
// has built its settings (NewFactory) and cobra reads os.Args.
func TestWithDefault(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
		used     bool
	}{
		{[]string{"otelcol-evalbridge"}, []string{"otelcol-evalbridge", "--config", URI}, true},
		{[]string{"otelcol-evalbridge", "--feature-gates=x"}, []string{"otelcol-evalbridge", "--feature-gates=x", "--config", URI}, true},
		{[]string{"otelcol-evalbridge", "--config=c.yaml"}, []string{"otelcol-evalbridge", "--config=c.yaml"}, false},
		{[]string{"otelcol-evalbridge", "components"}, []string{"otelcol-evalbridge", "components"}, false},
		{nil, nil, false},
	} {
		got, used := withDefault(slices.Clone(tc.in))
		if used != tc.used || !slices.Equal(got, tc.want) {
			t.Errorf("withDefault(%q) = %q, %v; want %q, %v", tc.in, got, used, tc.want, tc.used)
		}
	}
	// NewFactory leaves a test binary's command line alone.
	before := slices.Clone(os.Args)
	NewFactory()
	if !slices.Equal(os.Args, before) {
		t.Errorf("NewFactory changed a test binary's os.Args: %q -> %q", before, os.Args)
	}
}
