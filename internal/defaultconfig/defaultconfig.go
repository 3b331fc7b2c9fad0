// Package defaultconfig gives otelcol-evalbridge its embedded default
// configuration when it is started with no --config, in both builds:
//
//   - ./cmd/otelcol-evalbridge calls Args on its command line;
//   - the ocb build (builder-config.yaml) lists this package as a confmap
//     provider: ocb's generated main calls NewFactory before the command line
//     is parsed, and NewFactory applies Args to os.Args once (ocb offers no
//     other hook into main). The provider resolves `evalbridge:default` to
//     the same YAML.
//
// default-config.yaml here is a copy of cmd/otelcol-evalbridge/default-config.yaml
// kept equal by a test there (`go test ./cmd/otelcol-evalbridge -run TestDefaultConfigCopies -update`).
package defaultconfig

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/confmap"
)

// YAML is the embedded default configuration.
//
//go:embed default-config.yaml
var YAML string

// Scheme is the provider's URI scheme; URI names the default config.
const (
	Scheme = "evalbridge"
	URI    = Scheme + ":default"
)

// Notice is printed to stderr when the ocb build starts on the embedded config.
const Notice = "otelcol-evalbridge: no --config given; starting on the embedded default config " +
	"(cmd/otelcol-evalbridge/default-config.yaml: `otelcol-evalbridge components` lists what it can use). " +
	"Use --config FILE for your own."

// Args returns the command-line arguments to run with. When the collector is
// started to run (no subcommand such as `validate` or `components`, no help
// or version flag) and neither --config nor --set is given, it appends
// --config uri and reports true.
func Args(args []string, uri string) ([]string, bool) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args, false // a subcommand: leave the command line as written
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // a flag's value
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "config", "set", "h", "help", "v", "version":
			return args, false
		}
	}
	out := make([]string, 0, len(args)+2)
	out = append(out, args...)
	out = append(out, "--config", uri)
	return out, true
}

var applyOnce sync.Once

// applyToOSArgs rewrites os.Args as Args does, once, and prints Notice when
// the default is used. Test binaries are left alone.
func applyToOSArgs() {
	applyOnce.Do(func() {
		if testing.Testing() {
			return
		}
		var used bool
		if os.Args, used = withDefault(os.Args); used {
			fmt.Fprintln(os.Stderr, Notice)
		}
	})
}

// withDefault applies Args to a whole argv (program name first).
func withDefault(argv []string) ([]string, bool) {
	if len(argv) == 0 {
		return argv, false
	}
	args, used := Args(argv[1:], URI)
	return append(argv[:1:1], args...), used
}

// NewFactory returns the `evalbridge:` provider. In a program (not a test)
// it first makes a command line without --config run on the default config.
func NewFactory() confmap.ProviderFactory {
	applyToOSArgs()
	return confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return provider{} })
}

type provider struct{}

func (provider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	if uri != URI {
		return nil, fmt.Errorf("%q: the %s provider knows only %s", uri, Scheme, URI)
	}
	return confmap.NewRetrievedFromYAML([]byte(YAML))
}

func (provider) Scheme() string                 { return Scheme }
func (provider) Shutdown(context.Context) error { return nil }
