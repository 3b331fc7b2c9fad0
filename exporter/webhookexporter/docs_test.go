package webhookexporter

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"gopkg.in/yaml.v3"
)

var yamlBlockRE = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// docs/monitors.md: every webhook exporter block loads and validates, and
// every Prometheus rule parses as PromQL and names only metrics that the
// eval processor documents.
func TestMonitorsDoc(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "monitors.md"))
	require.NoError(t, err)
	procDoc, err := os.ReadFile(filepath.Join("..", "..", "processor", "evalprocessor", "documentation.md"))
	require.NoError(t, err)
	env := regexp.MustCompile(`\$\{env:[A-Z_]+\}`)

	exporters, rules := 0, 0
	for _, m := range yamlBlockRE.FindAllStringSubmatch(string(raw), -1) {
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(env.ReplaceAllString(m[1], "resolved")), &doc), m[1])
		if exps, ok := doc["exporters"].(map[string]any); ok {
			for id, block := range exps {
				if id != "webhook" && !strings.HasPrefix(id, "webhook/") {
					continue
				}
				exporters++
				cfg := NewFactory().CreateDefaultConfig().(*Config)
				require.NoError(t, confmap.NewFromStringMap(block.(map[string]any)).Unmarshal(cfg), id)
				require.NoError(t, confmap.Validate(cfg), id)
				assert.NotEmpty(t, cfg.Monitors, "%s: an example without monitors", id)
			}
		}
		groups, _ := doc["groups"].([]any)
		for _, g := range groups {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				rule := r.(map[string]any)
				expr, _ := rule["expr"].(string)
				rules++
				parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
				require.NoError(t, err, "rule %v: %s", rule["alert"], expr)
				names := 0
				parser.Inspect(parsed, func(n parser.Node, _ []parser.Node) error {
					vs, ok := n.(*parser.VectorSelector)
					if !ok {
						return nil
					}
					names++
					base := vs.Name
					for _, suffix := range []string{"_total", "_sum", "_count", "_bucket"} {
						base = strings.TrimSuffix(base, suffix)
					}
					assert.Contains(t, string(procDoc), "### "+base+"\n", "rule %v names %s, which the processor does not document", rule["alert"], vs.Name)
					return nil
				})
				assert.Positive(t, names)
			}
		}
	}
	assert.GreaterOrEqual(t, exporters, 4, "the configuration and the per agent, model and service examples")
	assert.GreaterOrEqual(t, rules, 2, "the pass rate and mean score rules")
}
