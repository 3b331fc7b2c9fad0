package dashboard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// dashboard.json is what the generator makes of the code: regenerate it
// with `go run ./deploy/grafana` after a change.
func TestDashboardJSONIsGenerated(t *testing.T) {
	want, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("deploy/grafana/dashboard.json is stale: run go run ./deploy/grafana")
	}
	// It is a dashboard Grafana imports: uid, panels with PromQL targets
	// on the datasource variable.
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID != UID {
		t.Errorf("uid %q", d.UID)
	}
	n := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		n++
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target %+v", p.Title, tg)
			}
		}
	}
	if n != len(Panels()) {
		t.Errorf("%d panels in the JSON, %d in the code", n, len(Panels()))
	}
}

// Every query parses as PromQL and names its metric; the list is logged
// (the metrics are checked against a scrape of the distribution by
// cmd/otelcol-evalbridge's TestDashboardMetricsAreEmitted).
func TestQueriesParse(t *testing.T) {
	m, err := Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for name, panels := range m {
		lines = append(lines, name+": "+strings.Join(panels, "; "))
	}
	sort.Strings(lines)
	t.Logf("metrics read by the dashboard:\n%s", strings.Join(lines, "\n"))
	for _, want := range []string{"gen_ai_evaluation_results_total", "gen_ai_evaluation_score_bucket",
		"otelcol_processor_eval_judge_tokens", "otelcol_processor_eval_judge_cost", "otelcol_processor_eval_traces_held",
		"otelcol_processor_eval_spans_refused", "otelcol_processor_eval_spans_dropped"} {
		if _, ok := m[want]; !ok {
			t.Errorf("no panel reads %s", want)
		}
	}
}
