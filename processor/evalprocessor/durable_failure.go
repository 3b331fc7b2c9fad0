package evalprocessor

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/storageext"
)

// A store that cannot be opened or read (docs/contract.md §22,
// `storage_failure`). A corrupt file used to keep the collector from
// starting: on Kubernetes a crash loop until someone deleted it, with
// every trace of the pod unscored meanwhile. With `continue` (the default)
// the processor runs without durable holding, says so at error level and
// in otelcol_processor_eval_storage_unavailable; with `fail` Start
// refuses, naming the remedies. A configuration mistake (no such
// extension, not a storage extension, one that cannot list its keys)
// always fails: it is not a broken file, and running on would hide it.

// openDurable opens the store named by `storage`. With
// `storage_failure: continue` a store that cannot be opened gives a nil
// store and no error.
func (p *evalProcessor) openDurable(ctx context.Context, host component.Host) (*holdStore, error) {
	s, err := openStore(ctx, host, *p.cfg.Storage, p.id, p.clk.now, p.logger, p.tel)
	var openErr *storageext.OpenError
	if err != nil && !errors.As(err, &openErr) {
		return nil, err
	}
	if err != nil {
		return nil, p.storeUnavailable(ctx, "opening", err)
	}
	p.tel.storageUnavailable.Record(ctx, 0)
	return s, nil
}

// scanDurable lists what the store holds (holdStore.scan). With
// `storage_failure: continue` a store that cannot be read is closed and
// the processor goes on without it.
func (p *evalProcessor) scanDurable(ctx context.Context) (stored []storedTrace, err error) {
	func() {
		defer func() {
			// bbolt panics on some corrupt pages instead of returning an error.
			if r := recover(); r != nil {
				err = fmt.Errorf("storage: restoring held traces: reading the store panicked (a corrupt file?): %v", r)
			}
		}()
		stored, err = p.store.scan(ctx)
	}()
	if err == nil {
		return stored, nil
	}
	if cerr := p.closeStore(ctx); cerr != nil {
		err = errors.Join(err, cerr)
	}
	p.store = nil
	return nil, p.storeUnavailable(ctx, "reading", err)
}

// storeUnavailable handles a store that failed at start: the error to
// return with `fail`; with `continue`, nil once logged and counted.
func (p *evalProcessor) storeUnavailable(ctx context.Context, doing string, cause error) error {
	file := fmt.Sprintf("processor_%s_%s", p.id.Type(), p.id.Name())
	remedies := fmt.Sprintf("set `recreate: true` on the %s extension (it moves a corrupt file aside and starts a new one), "+
		"or move the file %s in its directory aside, then restart", p.cfg.Storage, file)
	if p.cfg.StorageFailure == engine.StorageFailureFail {
		return fmt.Errorf("%w; storage_failure is fail, so the collector does not start without durable holding: %s "+
			"(or set storage_failure: continue to run without it)", cause, remedies)
	}
	p.tel.storageUnavailable.Record(ctx, 1)
	p.logger.Error("storage: "+doing+" the store failed; running WITHOUT durable holding (held spans and log records are lost "+
		"if the collector stops) and otelcol_processor_eval_storage_unavailable is 1: "+remedies,
		zap.Stringer("storage", p.cfg.Storage), zap.Error(cause))
	return nil
}
