package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/internal/configerr"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// loadConfig reads the same YAML as the `eval` processor block, with the
// collector's own resolver so `${env:OPENAI_API_KEY}` works the same way;
// a reference to an unset variable is a warning on stderr, as the
// collector logs one (a judge without its key would be called without
// Authorization, and say nothing).
func loadConfig(ctx context.Context, path string, stderr io.Writer) (*engine.Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	// The file is read once more, for messages that name its lines: the
	// resolver reports some YAML errors at the wrong line, and unknown keys
	// by the Go type that lacks them.
	raw, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := configerr.Syntax(path, raw); err != nil {
		return nil, err
	}
	core, warnings := observer.New(zapcore.WarnLevel)
	defer func() {
		for _, e := range warnings.TakeAll() {
			if name, ok := e.ContextMap()["name"].(string); ok && strings.Contains(e.Message, "unset environment variable") {
				fmt.Fprintf(stderr, "evalctl: warning: config %s references ${env:%s}, which is not set: it resolves to an empty value\n", path, name)
				continue
			}
			fmt.Fprintf(stderr, "evalctl: warning: config %s: %s\n", path, e.Message)
		}
	}()
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + abs},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		ProviderSettings:  confmap.ProviderSettings{Logger: zap.New(core)},
		DefaultScheme:     "env",
	})
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	defer func() { _ = resolver.Shutdown(ctx) }()
	conf, err := resolver.Resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg := engine.NewDefaultConfig()
	if err := conf.Unmarshal(&cfg); err != nil {
		if rewritten := configerr.Rewrite(err, &cfg, path, raw); rewritten != err {
			return nil, rewritten
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := confmap.Validate(&cfg); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &cfg, nil
}
