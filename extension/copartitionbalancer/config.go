package copartitionbalancer

import (
	"errors"
	"os"
	"strings"
)

// Config of the copartition_balancer extension.
type Config struct {
	// CollectorID names this collector in the consumer group. The traces and
	// logs consumers of one collector share it; every collector needs its own.
	// Empty means the host name, which is unique per pod in Kubernetes; several
	// collectors on one host must set it (e.g. from the env var that also
	// feeds group_instance_id).
	CollectorID string `mapstructure:"collector_id"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.CollectorID) != c.CollectorID {
		return errors.New("collector_id must not start or end with spaces")
	}
	return nil
}

// collectorID is the configured id, else the host name.
func (c *Config) collectorID() (string, error) {
	if c.CollectorID != "" {
		return c.CollectorID, nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "", errors.New("collector_id is empty and the host name is unknown: set collector_id")
	}
	return host, nil
}
