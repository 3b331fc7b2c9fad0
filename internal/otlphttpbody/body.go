// Package otlphttpbody reads the body of an OTLP/HTTP export request as the
// test backends (internal/testkit's sink), the load generator's capture sink
// and the fleet test's sink receive it: gzip-compressed or not,
// protobuf-encoded, and answers it.
package otlphttpbody

import (
	"compress/gzip"
	"io"
	"net/http"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
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
	req := ptraceotlp.NewExportRequest()
	return req.Traces(), decode(w, r, req.UnmarshalProto)
}

// Logs reads an OTLP/HTTP protobuf logs export request. On error it has
// answered 400 already.
func Logs(w http.ResponseWriter, r *http.Request) (plog.Logs, bool) {
	req := plogotlp.NewExportRequest()
	return req.Logs(), decode(w, r, req.UnmarshalProto)
}

// Metrics reads an OTLP/HTTP protobuf metrics export request. On error it
// has answered 400 already.
func Metrics(w http.ResponseWriter, r *http.Request) (pmetric.Metrics, bool) {
	req := pmetricotlp.NewExportRequest()
	return req.Metrics(), decode(w, r, req.UnmarshalProto)
}

// decode reads the body into an export request through its unmarshal; on
// error it answers 400.
func decode(w http.ResponseWriter, r *http.Request, unmarshal func([]byte) error) bool {
	raw, err := Read(r)
	if err == nil {
		err = unmarshal(raw)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// Accept answers an export request with full success: an empty protobuf
// export response, the same for traces, logs and metrics.
func Accept(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}
