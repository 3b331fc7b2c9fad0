package webhookexporter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/evalbridge/evalbridge/internal/textutil"
)

const (
	contentTypeJSON = "application/json"
	contentTypeText = "text/plain; charset=utf-8"

	// slackMaxAlerts bounds the blocks of one Slack message (Slack allows 50).
	slackMaxAlerts = 20
)

// templateFuncs are available in format: template.
var templateFuncs = template.FuncMap{
	// json renders a value as JSON (strings quoted and escaped).
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	// num renders a *float64 score or threshold ("null" when absent).
	"num": func(f *float64) string {
		if f == nil {
			return "null"
		}
		return strconv.FormatFloat(*f, 'g', -1, 64)
	},
	"join":  strings.Join,
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
}

// encoder renders a Payload into a request body.
type encoder interface {
	encode(p Payload) ([]byte, error)
	contentType() string
}

func newEncoder(cfg *Config) (encoder, error) {
	switch cfg.formatOrDefault() {
	case FormatSlack:
		return slackEncoder{}, nil
	case FormatTemplate:
		t, err := parseTemplate(cfg.Template)
		if err != nil {
			return nil, err
		}
		return templateEncoder{t: t}, nil
	default:
		return jsonEncoder{}, nil
	}
}

type jsonEncoder struct{}

func (jsonEncoder) contentType() string { return contentTypeJSON }
func (jsonEncoder) encode(p Payload) ([]byte, error) {
	if len(p.Alerts) == 0 && len(p.Monitors) > 0 {
		return marshalJSON(struct {
			Monitors []MonitorNotification `json:"monitors"`
		}{p.Monitors})
	}
	if p.Alerts == nil {
		p.Alerts = []Alert{}
	}
	return marshalJSON(p)
}

// templateEncoder executes the user's template over the Payload. The
// Content-Type is text/plain unless a `headers:` entry overrides it.
type templateEncoder struct{ t *template.Template }

func (templateEncoder) contentType() string { return contentTypeText }
func (e templateEncoder) encode(p Payload) ([]byte, error) {
	var b bytes.Buffer
	if err := e.t.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("executing template: %w", err)
	}
	return b.Bytes(), nil
}

// slackEncoder writes a Slack incoming-webhook message.
type slackEncoder struct{}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (slackEncoder) contentType() string { return contentTypeJSON }
func (slackEncoder) encode(p Payload) ([]byte, error) {
	var msg slackMessage
	if len(p.Alerts) > 0 || len(p.Monitors) == 0 {
		msg = slackAlerts(p)
	}
	if len(p.Monitors) > 0 {
		text, blocks := slackMonitors(p.Monitors)
		if msg.Text != "" {
			text = msg.Text + "; " + text
		}
		msg.Text = text
		msg.Blocks = append(msg.Blocks, blocks...)
	}
	return marshalJSON(msg)
}

// slackAlerts renders the per-trace alerts of a payload.
func slackAlerts(p Payload) slackMessage {
	n := len(p.Alerts)
	summary := fmt.Sprintf("%d failed evaluation%s", n, plural(n))
	if n == 1 {
		a := p.Alerts[0]
		summary = fmt.Sprintf("Evaluation %s failed: score %s < threshold %s (trace %s)",
			a.Evaluator, fmtNum(a.Score), fmtNum(a.Threshold), a.TraceID)
	}
	if p.Suppressed > 0 {
		summary += fmt.Sprintf(" (+%d suppressed by rate limit)", p.Suppressed)
	}
	msg := slackMessage{Text: summary}
	msg.Blocks = append(msg.Blocks, slackBlock{Type: "header",
		Text: &slackText{Type: "plain_text", Text: fmt.Sprintf(":rotating_light: %d failed evaluation%s", n, plural(n))}})
	for i, a := range p.Alerts {
		if i == slackMaxAlerts {
			msg.Blocks = append(msg.Blocks, slackBlock{Type: "context",
				Elements: []slackText{{Type: "mrkdwn", Text: fmt.Sprintf("…and %d more", n-slackMaxAlerts)}}})
			break
		}
		trace := "`" + slackEscape(a.TraceID) + "`"
		if a.TraceURL != "" {
			trace = "<" + slackEscape(a.TraceURL) + "|" + slackEscape(a.TraceID) + ">"
		}
		fields := []slackText{
			{Type: "mrkdwn", Text: "*Evaluator*\n" + slackEscape(a.Evaluator)},
			{Type: "mrkdwn", Text: "*Score / threshold*\n" + fmtNum(a.Score) + " / " + fmtNum(a.Threshold)},
			{Type: "mrkdwn", Text: "*Trace*\n" + trace},
			{Type: "mrkdwn", Text: "*Span*\n" + slackEscape(a.SpanName)},
		}
		if a.AgentName != "" {
			fields = append(fields, slackText{Type: "mrkdwn", Text: "*Agent*\n" + slackEscape(a.AgentName)})
		}
		if a.ServiceName != "" {
			fields = append(fields, slackText{Type: "mrkdwn", Text: "*Service*\n" + slackEscape(a.ServiceName)})
		}
		if a.EvaluatorVersion != "" {
			fields = append(fields, slackText{Type: "mrkdwn", Text: "*Version*\n" + slackEscape(a.EvaluatorVersion)})
		}
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "section", Fields: fields})
		if a.Reason != "" {
			msg.Blocks = append(msg.Blocks, slackBlock{Type: "context",
				Elements: []slackText{{Type: "mrkdwn", Text: slackEscape(truncate(a.Reason, 500))}}})
		}
	}
	if p.Suppressed > 0 {
		d := digest{byEvaluator: p.SuppressedByEvaluator}
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "context",
			Elements: []slackText{{Type: "mrkdwn",
				Text: fmt.Sprintf(":no_bell: %d more failed evaluation%s suppressed by rate limit: %s", p.Suppressed, plural(p.Suppressed), slackEscape(d.String()))}}})
	}
	return msg
}

// slackMonitors renders monitor notifications: per notification the figure,
// the threshold, the window, the group and links to the sample traces.
func slackMonitors(notes []MonitorNotification) (string, []slackBlock) {
	var blocks []slackBlock
	var texts []string
	for i, n := range notes {
		if i == slackMaxAlerts {
			blocks = append(blocks, slackBlock{Type: "context",
				Elements: []slackText{{Type: "mrkdwn", Text: fmt.Sprintf("…and %d more monitor notifications", len(notes)-slackMaxAlerts)}}})
			break
		}
		line := monitorSentence(n)
		texts = append(texts, line)
		icon := ":rotating_light:"
		if n.State == StateResolved {
			icon = ":white_check_mark:"
		}
		blocks = append(blocks,
			slackBlock{Type: "header", Text: &slackText{Type: "plain_text",
				Text: truncate(fmt.Sprintf("%s Monitor %s %s", icon, n.Monitor, n.State), 150)}},
			slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: slackEscape(line)}})
		if len(n.SampleTraceIDs) > 0 {
			links := make([]string, len(n.SampleTraceIDs))
			for j, id := range n.SampleTraceIDs {
				links[j] = "`" + slackEscape(id) + "`"
				if j < len(n.SampleTraceURLs) {
					links[j] = "<" + slackEscape(n.SampleTraceURLs[j]) + "|" + slackEscape(id) + ">"
				}
			}
			blocks = append(blocks, slackBlock{Type: "context",
				Elements: []slackText{{Type: "mrkdwn", Text: "Sample failed traces: " + strings.Join(links, ", ")}}})
		}
	}
	return strings.Join(texts, "; "), blocks
}

// monitorSentence says what a notification is about in one line, e.g.
// "booking_pass_rate firing: pass rate 0.72 < 0.8 over 15m for
// gen_ai.agent.name=travel_agent (143 cases, 40 failed)".
func monitorSentence(n MonitorNotification) string {
	figure, label := n.PassRate, "pass rate"
	if n.Figure == "mean_score" {
		figure, label = 0, "mean score"
		if n.MeanScore != nil {
			figure = *n.MeanScore
		}
	}
	cmp := "<"
	if figure >= n.Threshold {
		cmp = ">="
	}
	group := "all cases"
	if len(n.Group) > 0 {
		keys := make([]string, 0, len(n.Group))
		for k := range n.Group {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			keys[i] = k + "=" + n.Group[k]
		}
		group = strings.Join(keys, ", ")
	}
	if n.Forgotten {
		return fmt.Sprintf("%s %s (forgotten): no case for %s and max_groups reached, its slot went to a new group; %s",
			n.Monitor, n.State, n.Window, group)
	}
	interval := ""
	if n.Interval != nil {
		interval = fmt.Sprintf(" (%g%% interval %s..%s)", n.Interval.Confidence*100,
			strconv.FormatFloat(n.Interval.Low, 'g', 4, 64), strconv.FormatFloat(n.Interval.High, 'g', 4, 64))
	}
	return fmt.Sprintf("%s %s: %s %s%s %s %s over %s for %s (%d case%s, %d failed)",
		n.Monitor, n.State, label, strconv.FormatFloat(figure, 'g', 4, 64), interval, cmp, strconv.FormatFloat(n.Threshold, 'g', 4, 64),
		n.Window, group, n.Cases, plural(n.Cases), n.Failed)
}

// marshalJSON is json.Marshal without HTML escaping (reasons and Slack
// mrkdwn links keep their <, > and &).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func fmtNum(f *float64) string {
	if f == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*f, 'g', 4, 64)
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string { return textutil.Truncate(s, n) }
