package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
)

// Pipeline shapes that defeat `eval` (docs/topologies.md). A component
// cannot see the pipelines it is in (component.Host shows extensions
// only), so the distribution checks the resolved configuration: a confmap
// converter that reads `service::pipelines` and changes nothing. Its
// warnings go to the collector's log (the collector buffers converter logs
// and writes them once its logger is built).

// beforeEvalWarnings are the processor types that must not come before
// `eval` in a pipeline, with why.
var beforeEvalWarnings = map[string]string{
	"batch": "it acknowledges spans before eval has them (eval's back-pressure ends there) and cuts requests by size, " +
		"so a trace's spans may arrive in separate requests long apart; put batch after eval, or leave it out (eval batches what it releases)",
	"probabilistic_sampler": "spans it drops are never scored; sample after eval (contract §19 `sampling:` samples by score)",
	"tail_sampling":         "it decides before any score exists and drops the traces it does not keep unscored; sample after eval",
	"groupbyattrs":          "it regroups spans across traces' resources; put it after eval",
}

type pipelineCheck struct{ logger *zap.Logger }

func newPipelineCheckFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(set confmap.ConverterSettings) confmap.Converter {
		l := set.Logger
		if l == nil {
			l = zap.NewNop()
		}
		return pipelineCheck{logger: l}
	})
}

// Convert warns about each pipeline that lists one of beforeEvalWarnings
// before an `eval` processor. It never changes conf nor fails.
func (c pipelineCheck) Convert(_ context.Context, conf *confmap.Conf) error {
	for _, w := range pipelineWarnings(conf) {
		c.logger.Warn(w)
	}
	return nil
}

// pipelineWarnings lists the warnings for conf, in pipeline order.
func pipelineWarnings(conf *confmap.Conf) []string {
	pipes, ok := conf.Get("service::pipelines").(map[string]any)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(pipes))
	for n := range pipes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		p, _ := pipes[name].(map[string]any)
		procs, _ := p["processors"].([]any)
		evalAt := -1
		for i, v := range procs {
			if s, _ := v.(string); componentType(s) == "eval" {
				evalAt = i
				break
			}
		}
		for i := 0; i < evalAt; i++ {
			s, _ := procs[i].(string)
			if why, bad := beforeEvalWarnings[componentType(s)]; bad {
				ev, _ := procs[evalAt].(string)
				out = append(out, fmt.Sprintf("pipeline %q: processor %q comes before %q: %s", name, s, ev, why))
			}
		}
	}
	return out
}

// componentType is the type of a component id (`batch/x` -> `batch`).
func componentType(id string) string {
	t, _, _ := strings.Cut(strings.TrimSpace(id), "/")
	return t
}
