package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// fileClient is an OTLP client that writes each export request as one line
// of OTLP/JSON to a file, as a collector's file exporter does, so the SDK's
// own OTLP encoding is what lands in the file (-out).
type fileClient struct {
	path string
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
}

func (c *fileClient) Start(context.Context) error {
	f, err := os.Create(c.path)
	if err != nil {
		return err
	}
	c.f, c.w = f, bufio.NewWriter(f)
	return nil
}

func (c *fileClient) UploadTraces(_ context.Context, spans []*tracepb.ResourceSpans) error {
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: spans})
	if err != nil {
		return err
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		return err
	}
	var m ptrace.JSONMarshaler
	line, err := m.MarshalTraces(req.Traces())
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", c.path, err)
	}
	return nil
}

func (c *fileClient) Stop(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Flush(); err != nil {
		_ = c.f.Close()
		return fmt.Errorf("writing %s: %w", c.path, err)
	}
	return c.f.Close()
}

// newFileExporter is newExporter writing to a file.
func newFileExporter(ctx context.Context, path string) (sdktrace.SpanExporter, error) {
	return otlptrace.New(ctx, &fileClient{path: path})
}

func demoResource() *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("service.name", "travel-agent-demo"),
		attribute.String("service.version", "1.0.0"),
	)
}
