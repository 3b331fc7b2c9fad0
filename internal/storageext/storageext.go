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
	client, err := getClient(ctx, se, kind, self, name)
	if err != nil {
		return nil, &OpenError{err: fmt.Errorf("%s: extension %q: %w", field, id, err)}
	}
	return client, nil
}

// OpenError is an extension's failure to give the client (for
// file_storage: the file cannot be opened, e.g. it is corrupt), as opposed
// to a configuration mistake (no such extension, not a storage extension).
type OpenError struct{ err error }

func (e *OpenError) Error() string { return e.err.Error() }
func (e *OpenError) Unwrap() error { return e.err }

// getClient is se.GetClient with a panic turned into an error: bbolt
// panics on some corrupt files, and file_storage recovers only with
// `recreate: true`.
func getClient(ctx context.Context, se storage.Extension, kind component.Kind, self component.ID, name string) (c storage.Client, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("opening the store panicked (a corrupt file?): %v", r)
		}
	}()
	return se.GetClient(ctx, kind, self, name)
}
