package evalmetricsconnector

//go:generate go run ../../internal/telemetrydoc/mdgen

// scopeName is the scope of the metrics the connector emits; its own
// instruments are registered by the builder go generate writes from
// metadata.yaml (internal/metadata).
const scopeName = "github.com/evalbridge/evalbridge/connector/evalmetricsconnector"
