// Package otlphttpbody reads the body of an OTLP/HTTP export request as the
// test backends, the load generator's capture sink and the fleet test's
// sink receive it: gzip-compressed or not, protobuf-encoded.
package otlphttpbody

import (
	"compress/gzip"
	"io"
	"net/http"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Read returns the request's body, decompressed when it is gzip-encoded.
func Read(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	return io.ReadAll(body)
}

// Traces reads an OTLP/HTTP protobuf traces export request. On error it
// has answered 400 already.
func Traces(w http.ResponseWriter, r *http.Request) (ptrace.Traces, bool) {
	raw, err := Read(r)
	if err == nil {
		req := ptraceotlp.NewExportRequest()
		if err = req.UnmarshalProto(raw); err == nil {
			return req.Traces(), true
		}
	}
	http.Error(w, err.Error(), http.StatusBadRequest)
	return ptrace.Traces{}, false
}

// Logs reads an OTLP/HTTP protobuf logs export request. On error it has
// answered 400 already.
func Logs(w http.ResponseWriter, r *http.Request) (plog.Logs, bool) {
	raw, err := Read(r)
	if err == nil {
		req := plogotlp.NewExportRequest()
		if err = req.UnmarshalProto(raw); err == nil {
			return req.Logs(), true
		}
	}
	http.Error(w, err.Error(), http.StatusBadRequest)
	return plog.Logs{}, false
}
