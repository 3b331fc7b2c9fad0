package evalprocessor

import (
	"go.opentelemetry.io/collector/confmap"

	"github.com/evalbridge/evalbridge/internal/configerr"
)

// Unmarshal decodes the processor's block as confmap would, but reports a
// key no option takes as the user wrote it (`unknown key "evaluatorz"`,
// `unknown key "sessions.idel"`), not as the Go type that lacks it.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	return configerr.Rewrite(conf.Unmarshal(c), c, "", nil)
}
