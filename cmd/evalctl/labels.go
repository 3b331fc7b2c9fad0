package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/evalbridge/evalbridge/internal/humanlabel"
)

// humanLabel is one person's verdict on one evaluation of one span (or,
// without a span id, of the trace's agent case): docs/contract.md §25.
type humanLabel struct {
	TraceID  pcommon.TraceID
	SpanID   pcommon.SpanID // empty: the trace's agent case
	Name     string         // the evaluator instance it labels
	Pass     bool
	Critique string
	where    string // file and line or document, for messages
}

// labelFile is what the --labels files gave: the labels, and the records
// that gave none, by reason (they are reported, never silently dropped).
type labelFile struct {
	labels  []humanLabel
	dropped map[string]int
}

func (lf *labelFile) drop(why string) { lf.dropped[why]++ }

// labelVerdict maps a label string to pass or fail through §25's default
// mapping, the one evalmetrics and the webhook exporter use; ok is false
// for one the mapping does not know (not a verdict).
var labelVerdict = humanlabel.Default().Verdict

// jsonLabel is a line of a JSONL labels file. Fields it does not name are
// ignored (an annotation tool's export carries more).
type jsonLabel struct {
	TraceID  string `json:"trace_id"`
	SpanID   string `json:"span_id"`
	Name     string `json:"name"`
	Label    string `json:"label"`
	Critique string `json:"critique"`
}

// readLabels reads every --labels file: JSON Lines of labels, OTLP/JSON
// logs export requests of human gen_ai.evaluation.result records, or both,
// told apart per document. A document that is neither, or a label without
// a trace id or name, is bad input (an error naming the file and line).
func readLabels(paths []string) (*labelFile, error) {
	lf := &labelFile{dropped: map[string]int{}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--labels %s: %w", p, err)
		}
		if err := lf.read(p, b); err != nil {
			return nil, err
		}
	}
	return lf, nil
}

func (lf *labelFile) read(name string, b []byte) error {
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
	for {
		// The line a document starts on (JSONL labels are one a line),
		// known before decoding it: a document that does not parse is
		// named by its own line, not the one before.
		start := int(dec.InputOffset())
		start += len(b[start:]) - len(bytes.TrimLeft(b[start:], " \t\r\n"))
		where := fmt.Sprintf("%s:%d", name, 1+bytes.Count(b[:start], []byte("\n")))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("--labels %s: not JSON: %w", where, err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("--labels %s: not a JSON object: want {\"trace_id\", \"span_id\", \"name\", \"label\"} or an OTLP/JSON logs export request", where)
		}
		if _, ok := keys["resourceLogs"]; ok {
			var u plog.JSONUnmarshaler
			ld, err := u.UnmarshalLogs(raw)
			if err != nil {
				return fmt.Errorf("--labels %s: not an OTLP/JSON logs export request: %w", where, err)
			}
			lf.readRecords(where, ld)
			continue
		}
		var jl jsonLabel
		if err := json.Unmarshal(raw, &jl); err != nil {
			return fmt.Errorf("--labels %s: %w", where, err)
		}
		l, err := jl.label(where)
		if err != nil {
			return fmt.Errorf("--labels %s: %w", where, err)
		}
		pass, ok := labelVerdict(jl.Label)
		if !ok {
			lf.drop(fmt.Sprintf("label %q is not one of %s or %s", jl.Label, strings.Join(humanlabel.DefaultPass, "/"), strings.Join(humanlabel.DefaultFail, "/")))
			continue
		}
		l.Pass = pass
		lf.labels = append(lf.labels, l)
	}
}

func (jl jsonLabel) label(where string) (humanLabel, error) {
	l := humanLabel{Name: jl.Name, Critique: jl.Critique, where: where}
	switch {
	case jl.TraceID == "":
		return l, errors.New(`no "trace_id"`)
	case jl.Name == "":
		return l, errors.New(`no "name" (the evaluator the label is for)`)
	case jl.Label == "":
		return l, errors.New(`no "label"`)
	}
	if err := decodeID(l.TraceID[:], jl.TraceID); err != nil {
		return l, fmt.Errorf("trace_id %q: %w", jl.TraceID, err)
	}
	if jl.SpanID != "" {
		if err := decodeID(l.SpanID[:], jl.SpanID); err != nil {
			return l, fmt.Errorf("span_id %q: %w", jl.SpanID, err)
		}
	}
	return l, nil
}

// decodeID reads a hex trace or span id of exactly len(dst) bytes.
func decodeID(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return fmt.Errorf("want %d hex digits", 2*len(dst))
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return errors.New("not hex")
	}
	return nil
}

// Attributes of a gen_ai.evaluation.result record (§11, §24, §25).
const (
	attrEvaluatorType = "gen_ai.evaluation.evaluator.type"
	attrEvalName      = "gen_ai.evaluation.name"
	attrScoreLabel    = "gen_ai.evaluation.score.label"
	attrScoreValue    = "gen_ai.evaluation.score.value"
	attrExplanation   = "gen_ai.evaluation.explanation"
	resultEventName   = "gen_ai.evaluation.result"
)

// readRecords takes the human gen_ai.evaluation.result records of ld: the
// label is score.label through the mapping; a label it does not know (or
// none) with score.value 1 is pass and 0 fail; any other makes no label.
func (lf *labelFile) readRecords(where string, ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				lf.readRecord(where, lr)
			}
		}
	}
}

func (lf *labelFile) readRecord(where string, lr plog.LogRecord) {
	attrs := lr.Attributes()
	str := func(k string) string {
		if v, ok := attrs.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	event := lr.EventName()
	if event == "" {
		event = str("event.name")
	}
	switch {
	case event != resultEventName:
		lf.drop("log records that are not gen_ai.evaluation.result events")
		return
	case str(attrEvaluatorType) != "human":
		lf.drop("gen_ai.evaluation.result records whose gen_ai.evaluation.evaluator.type is not human")
		return
	case lr.TraceID().IsEmpty():
		lf.drop("human gen_ai.evaluation.result records without a trace id")
		return
	case str(attrEvalName) == "":
		lf.drop("human gen_ai.evaluation.result records without gen_ai.evaluation.name")
		return
	}
	pass, ok := labelVerdict(str(attrScoreLabel))
	if !ok {
		if v, has := attrs.Get(attrScoreValue); has {
			switch x := v.Double(); {
			case v.Type() == pcommon.ValueTypeInt && v.Int() == 1, v.Type() == pcommon.ValueTypeDouble && x == 1:
				pass, ok = true, true
			case v.Type() == pcommon.ValueTypeInt && v.Int() == 0, v.Type() == pcommon.ValueTypeDouble && x == 0:
				pass, ok = false, true
			}
		}
	}
	if !ok {
		lf.drop("human gen_ai.evaluation.result records whose score.label the mapping does not know and whose score.value is not 1 or 0")
		return
	}
	lf.labels = append(lf.labels, humanLabel{
		TraceID: lr.TraceID(), SpanID: lr.SpanID(), Name: str(attrEvalName), Pass: pass,
		Critique: str(attrExplanation), where: where,
	})
}
