// Program otelcol-evalbridge is an OpenTelemetry Collector distribution that
// scores LLM agents from their traces with the `eval` processor.
//
// Run it from the repository root with `go run ./cmd/otelcol-evalbridge`: with
// no --config it starts on an embedded default configuration (OTLP in on
// localhost:4317/4318, the deterministic evaluators, the debug exporter, the
// evaluation metrics on localhost:8889).
// With --config it behaves as every collector does.
package main

import (
	_ "embed"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	envprovider "go.opentelemetry.io/collector/confmap/provider/envprovider"
	fileprovider "go.opentelemetry.io/collector/confmap/provider/fileprovider"
	httpprovider "go.opentelemetry.io/collector/confmap/provider/httpprovider"
	httpsprovider "go.opentelemetry.io/collector/confmap/provider/httpsprovider"
	yamlprovider "go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/evalbridge/evalbridge/internal/defaultconfig"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.0.0-dev"

//go:embed default-config.yaml
var defaultConfig string

// defaultConfigNotice is printed to stderr when the embedded config is used.
const defaultConfigNotice = "otelcol-evalbridge: no --config given; starting on the embedded default config " +
	"(OTLP gRPC localhost:4317, HTTP localhost:4318; eval with tool_call_validity, tool_error, " +
	"tool_efficiency, tool_trajectory; debug exporter; evaluation metrics on http://localhost:8889/metrics). " +
	"Use --config FILE for your own."

func main() {
	set := settings()
	args, usedDefault := argsWithDefaultConfig(os.Args[1:])
	if usedDefault {
		fmt.Fprintln(os.Stderr, defaultConfigNotice)
	}
	cmd := otelcol.NewCommand(set)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		// cobra has already printed the error.
		os.Exit(1)
	}
}

// benchComponents, added by build tags (bench_groupbytrace.go,
// bench_floor.go), add components that benchmarks compare with; the
// distribution has none.
var benchComponents []func(*otelcol.Factories)

// factories are the distribution's components (components.go), and those a
// benchmark build adds.
func factories() (otelcol.Factories, error) {
	f, err := components()
	if err == nil {
		for _, add := range benchComponents {
			add(&f)
		}
	}
	return f, err
}

// settings are the distribution's collector settings, as ocb would generate them.
func settings() otelcol.CollectorSettings {
	return otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-evalbridge",
			Description: "OpenTelemetry Collector distribution that scores LLM agents from their traces",
			Version:     version,
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					httpprovider.NewFactory(),
					httpsprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
				// warns about pipeline shapes that defeat eval (pipelinecheck.go)
				ConverterFactories: []confmap.ConverterFactory{newPipelineCheckFactory()},
			},
		},
	}
}

// defaultConfigURI is the embedded default configuration as a `yaml:` URI,
// which the yaml provider resolves in place.
func defaultConfigURI() string {
	return "yaml:" + defaultConfig
}

// argsWithDefaultConfig returns the command-line arguments to run with: the
// embedded default config when the collector is started to run with neither
// --config nor --set (defaultconfig.Args; the ocb build does the same through
// defaultconfig's provider).
func argsWithDefaultConfig(args []string) ([]string, bool) {
	return defaultconfig.Args(args, defaultConfigURI())
}
