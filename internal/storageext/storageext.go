// Package storageext gets a client of a storage extension that a component's
// config names: the eval processor's `storage` and the webhook exporter's
// `sending_queue.storage`.
package storageext

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Client returns the storage client name of extension id for the component
// self of kind. field is the config key that names id; errors start with it.
func Client(ctx context.Context, host component.Host, field string, id component.ID, kind component.Kind, self component.ID, name string) (storage.Client, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not configured (list it under `extensions:` and `service.extensions`)", field, id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not a storage extension", field, id)
	}
	client, err := se.GetClient(ctx, kind, self, name)
	if err != nil {
		return nil, fmt.Errorf("%s: extension %q: %w", field, id, err)
	}
	return client, nil
}
