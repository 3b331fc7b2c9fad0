package storageext_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/evalbridge/evalbridge/internal/storageext"
)

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// notStore is an extension that is not a storage extension.
type notStore struct {
	component.StartFunc
	component.ShutdownFunc
}

// store is a storage extension whose GetClient returns err, or a client
// that remembers what it was asked for.
type store struct {
	component.StartFunc
	component.ShutdownFunc
	err   error
	panic any
}

type client struct {
	storage.Client
	kind component.Kind
	self component.ID
	name string
}

func (s store) GetClient(_ context.Context, kind component.Kind, self component.ID, name string) (storage.Client, error) {
	if s.panic != nil {
		panic(s.panic)
	}
	if s.err != nil {
		return nil, s.err
	}
	return client{kind: kind, self: self, name: name}, nil
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	id := component.MustNewID("file_storage")
	self := component.MustNewIDWithName("webhook", "alerts")

	var openErr *storageext.OpenError
	_, err := storageext.Client(ctx, componenttest.NewNopHost(), "sending_queue.storage", id, component.KindExporter, self, "monitors")
	require.EqualError(t, err, "sending_queue.storage: extension \"file_storage\" is not configured (list it under `extensions:` and `service.extensions`)")
	assert.False(t, errors.As(err, &openErr), "a configuration mistake is not a store that failed to open")

	_, err = storageext.Client(ctx, host{id: notStore{}}, "storage", id, component.KindProcessor, self, "")
	require.EqualError(t, err, `storage: extension "file_storage" is not a storage extension`)
	assert.False(t, errors.As(err, &openErr))

	_, err = storageext.Client(ctx, host{id: store{err: errors.New("disk full")}}, "storage", id, component.KindProcessor, self, "")
	require.EqualError(t, err, `storage: extension "file_storage": disk full`)
	assert.True(t, errors.As(err, &openErr))

	// bbolt panics on some corrupt files; file_storage recovers only with recreate: true.
	_, err = storageext.Client(ctx, host{id: store{panic: "freepages: failed to get all reachable pages"}}, "storage", id, component.KindProcessor, self, "")
	require.EqualError(t, err, `storage: extension "file_storage": opening the store panicked (a corrupt file?): freepages: failed to get all reachable pages`)
	assert.True(t, errors.As(err, &openErr))

	c, err := storageext.Client(ctx, host{id: store{}}, "storage", id, component.KindExporter, self, "monitors")
	require.NoError(t, err)
	assert.Equal(t, client{kind: component.KindExporter, self: self, name: "monitors"}, c)
}
