package testkit

import (
	"os"
	"strings"
	"testing"
	"text/template"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ReadTraces reads an OTLP/JSON traces file (the examples' format).
func ReadTraces(t testing.TB, path string) ptrace.Traces {
	t.Helper()
	return readOTLP(t, path, (&ptrace.JSONUnmarshaler{}).UnmarshalTraces)
}

// ReadLogs reads an OTLP/JSON logs file.
func ReadLogs(t testing.TB, path string) plog.Logs {
	t.Helper()
	return readOTLP(t, path, (&plog.JSONUnmarshaler{}).UnmarshalLogs)
}

func readOTLP[T any](t testing.TB, path string, unmarshal func([]byte) (T, error)) T {
	t.Helper()
	data, err := unmarshal(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// Config renders a collector config kept as a file (testdata/*.yaml): a
// text/template whose {{.Name}} fields are filled from vars — the
// addresses and URLs a test picks when it runs. The collector's own
// ${env:NAME} references are left for the collector. A field vars does not
// have, or a var the file never uses, fails the test.
func Config(t testing.TB, path string, vars map[string]string) string {
	t.Helper()
	text := string(readFile(t, path))
	tmpl, err := template.New(path).Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for k := range vars {
		if !strings.Contains(text, "."+k+"}}") && !strings.Contains(text, "."+k+" }}") {
			t.Fatalf("%s does not use {{.%s}}", path, k)
		}
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, vars); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b.String()
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
