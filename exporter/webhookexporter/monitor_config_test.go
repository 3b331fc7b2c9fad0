package webhookexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadMonitorsConfig(t *testing.T) {
	def, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.True(t, def.PerTraceAlerts, "per_trace_alerts defaults to true")
	assert.Equal(t, DefaultMaxGroups, def.MaxGroups)
	assert.Empty(t, def.Monitors)

	cfg, err := loadConfig(t, "monitors")
	require.NoError(t, err)
	assert.False(t, cfg.PerTraceAlerts)
	assert.Equal(t, 50, cfg.MaxGroups)
	require.Len(t, cfg.Monitors, 2)
	m := cfg.Monitors[0]
	assert.Equal(t, "booking_pass_rate", m.Name)
	assert.Equal(t, "booking_flow", m.Evaluator)
	assert.Equal(t, []string{"service.name", "gen_ai.agent.name"}, m.GroupBy)
	assert.Equal(t, 15*time.Minute, m.Window)
	assert.Equal(t, 20, m.MinCases)
	require.NotNil(t, m.PassRateBelow)
	assert.InDelta(t, 0.8, *m.PassRateBelow, 1e-9)
	assert.Nil(t, m.MeanScoreBelow)
	assert.Equal(t, time.Hour, m.Renotify)
	require.NotNil(t, cfg.Monitors[1].MeanScoreBelow)
	assert.InDelta(t, 0.7, *cfg.Monitors[1].MeanScoreBelow, 1e-9)
	assert.Zero(t, cfg.Monitors[1].Renotify)
	assert.Zero(t, cfg.Monitors[0].MaxGroups)
	assert.Equal(t, 20, cfg.Monitors[1].MaxGroups)
}

func TestValidateMonitors(t *testing.T) {
	valid := func() *Config {
		cfg := createDefaultConfig().(*Config)
		cfg.ClientConfig.Endpoint = "https://hooks.example.com/x"
		cfg.Monitors = []MonitorConfig{passRateMonitor()}
		return cfg
	}
	require.NoError(t, valid().Validate())
	for want, mutate := range map[string]func(c *Config){
		`name "Bad-Name" must match`:                 func(c *Config) { c.Monitors[0].Name = "Bad-Name" },
		`evaluator "" must be an evaluation name`:    func(c *Config) { c.Monitors[0].Evaluator = "" },
		`group_by: "a" listed twice`:                 func(c *Config) { c.Monitors[0].GroupBy = []string{"a", "a"} },
		"group_by: empty attribute name":             func(c *Config) { c.Monitors[0].GroupBy = []string{""} },
		"window must be at least 1s, got 0s":         func(c *Config) { c.Monitors[0].Window = 0 },
		"min_cases must be >= 0 (0 means 1), got -1": func(c *Config) { c.Monitors[0].MinCases = -1 },
		"set exactly one of pass_rate_below":         func(c *Config) { c.Monitors[0].PassRateBelow = nil },
		"pass_rate_below and mean_score_below":       func(c *Config) { c.Monitors[0].MeanScoreBelow = ptr(0.5) },
		"pass_rate_below must be in (0, 1], got 1.5": func(c *Config) { c.Monitors[0].PassRateBelow = ptr(1.5) },
		"mean_score_below must be in (0, 1], got 0": func(c *Config) {
			c.Monitors[0].PassRateBelow, c.Monitors[0].MeanScoreBelow = nil, ptr(0)
		},
		"renotify must be >= 0":                           func(c *Config) { c.Monitors[0].Renotify = -time.Second },
		`monitors[1]: name "flow_rate" is used twice`:     func(c *Config) { c.Monitors = append(c.Monitors, c.Monitors[0]) },
		"max_groups must be >= 0 (0 means the exporter's": func(c *Config) { c.Monitors[0].MaxGroups = -1 },
		"max_groups must be >= 1, got 0":                  func(c *Config) { c.MaxGroups = 0 },
		"per_trace_alerts is false and no monitors":       func(c *Config) { c.PerTraceAlerts, c.Monitors = false, nil },
	} {
		t.Run(want, func(t *testing.T) {
			cfg := valid()
			mutate(cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
