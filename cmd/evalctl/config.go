package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"

	"github.com/evalbridge/evalbridge/internal/configerr"
	"github.com/evalbridge/evalbridge/internal/engine"
)

// loadConfig reads the same YAML as the `eval` processor block, with the
// collector's own resolver so `${env:OPENAI_API_KEY}` works the same way.
func loadConfig(ctx context.Context, path string) (*engine.Config, error) {
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
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + abs},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
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
