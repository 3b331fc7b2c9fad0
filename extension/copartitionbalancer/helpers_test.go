package copartitionbalancer

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func extensionSettings() extension.Settings {
	return extension.Settings{
		ID:                component.NewID(Type),
		TelemetrySettings: componenttest.NewNopTelemetrySettings(),
	}
}
