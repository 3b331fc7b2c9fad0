package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// document is one OTLP/JSON export request read from an input: traces, or
// logs (the content log records of the official GenAI instrumentations,
// joined to their spans by trace and span id).
type document struct {
	source string // file name and document number, for messages
	file   string // the input it came from ("stdin" for -)
	traces ptrace.Traces
	logs   plog.Logs
	isLogs bool
}

// readInputs reads every INPUT. A file holds one or more JSON documents,
// pretty-printed or as JSON Lines; each is an OTLP/JSON export request or
// a Jaeger JSON export, told apart by their top-level keys.
func readInputs(paths []string, stdin io.Reader) ([]document, error) {
	var docs []document
	for _, p := range paths {
		var r io.Reader
		name := p
		if p == "-" {
			r, name = stdin, "stdin"
		} else {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", p, err)
			}
			defer f.Close()
			r = f
		}
		got, err := readDocuments(name, r)
		if err != nil {
			return nil, err
		}
		docs = append(docs, got...)
	}
	return docs, nil
}

func readDocuments(name string, r io.Reader) ([]document, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	var u ptrace.JSONUnmarshaler
	var lu plog.JSONUnmarshaler
	var docs []document
	spans, records := 0, 0
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("input %s, document %d: not JSON: %w", name, n, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var td ptrace.Traces
		switch kind := documentKind(raw); kind {
		case "otlp":
			if td, err = u.UnmarshalTraces(raw); err != nil {
				return nil, fmt.Errorf("input %s, document %d: not an OTLP/JSON trace export request: %w", name, n, err)
			}
		case "otlp-logs":
			ld, err := lu.UnmarshalLogs(raw)
			if err != nil {
				return nil, fmt.Errorf("input %s, document %d: not an OTLP/JSON logs export request: %w", name, n, err)
			}
			docs = append(docs, document{source: fmt.Sprintf("%s#%d", name, n), file: name, logs: ld, isLogs: true})
			records += ld.LogRecordCount()
			continue
		case "jaeger", "jaeger-trace":
			if td, err = jaegerToTraces(raw, kind); err != nil {
				return nil, fmt.Errorf("input %s, document %d: %w", name, n, err)
			}
		default:
			return nil, fmt.Errorf("input %s, document %d: neither an OTLP/JSON trace or logs export request (\"resourceSpans\", \"resourceLogs\") "+
				"nor a Jaeger JSON export (\"data\": [{\"traceID\", \"spans\", \"processes\"}])", name, n)
		}
		docs = append(docs, document{source: fmt.Sprintf("%s#%d", name, n), file: name, traces: td})
		spans += td.SpanCount()
	}
	// A file with no span in it scores nothing, and a gate over nothing
	// would pass: that is bad input, not an empty success.
	if spans == 0 && records == 0 {
		return nil, fmt.Errorf("input %s: no trace found (%d document(s), no span as OTLP/JSON or Jaeger JSON)", name, len(docs))
	}
	return docs, nil
}

// writeDocuments writes the (annotated) documents as JSON Lines of OTLP/JSON.
func writeDocuments(w io.Writer, docs []document) error {
	var m ptrace.JSONMarshaler
	bw := bufio.NewWriter(w)
	for _, d := range docs {
		if d.isLogs {
			continue // --out writes traces
		}
		b, err := m.MarshalTraces(d.traces)
		if err != nil {
			return fmt.Errorf("%s: %w", d.source, err)
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}
