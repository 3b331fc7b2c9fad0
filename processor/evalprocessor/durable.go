package evalprocessor

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
)

// Durable holding (docs/contract.md §12, `storage:`). Every chunk that is
// held is written to the storage extension before ConsumeTraces or
// ConsumeLogs returns, so a receiver that acknowledges (or, for Kafka,
// commits its offset) after the call acknowledges only what is persisted.
// A chunk's key is deleted once the next consumer has accepted the released
// data it belongs to. On Start, what the storage holds is held again.
//
// Layout: one key per chunk, "t/<trace id hex>/<stamp>/<route>" (ptrace
// proto) or "l/<trace id hex>/<stamp>/<route>" (plog proto), where stamp is
// 16 hex digits of the persisting time in Unix ns, made unique and
// increasing, and route 2 hex digits: the pipeline it came in through
// (routes.go; keys without it, from earlier versions, are route 0). All chunks of
// one ConsumeTraces/ConsumeLogs call go in one storage Batch (one
// transaction in file_storage), and every key is self-describing, so there
// is no index to keep in step: a crash at any point leaves whole chunks or
// none, and Start finds them with storage.Walker (file_storage implements
// it; a storage extension whose client does not fails Start).

const (
	keyTraces = "t/"
	keyLogs   = "l/"
	// restoreMaxAgeFactor: a restored trace whose newest chunk was
	// persisted more than this many `wait`s ago (and at least
	// restoreMinMaxAge) is forwarded unscored, reason too_old: the
	// collector was down long enough that its scores would come late
	// anyway, and holding it again would delay its spans further.
	restoreMaxAgeFactor = 10
	restoreMinMaxAge    = time.Minute
	reasonTooOld        = "too_old"
)

// durable is the processor's storage client with the key scheme.
type durable struct {
	client storage.Client
	walker storage.Walker
	now    func() time.Time
	last   atomic.Uint64 // last stamp handed out
}

// openDurable gets the storage client of extension id from host.
func openDurable(ctx context.Context, host component.Host, id component.ID, self component.ID, now func() time.Time) (*durable, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("storage: extension %q is not configured (list it under `extensions:` and `service.extensions`)", id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("storage: extension %q is not a storage extension", id)
	}
	client, err := se.GetClient(ctx, component.KindProcessor, self, "")
	if err != nil {
		return nil, fmt.Errorf("storage: extension %q: %w", id, err)
	}
	w, ok := client.(storage.Walker)
	if !ok {
		return nil, errors.Join(
			fmt.Errorf("storage: extension %q cannot list its keys (its client does not implement storage.Walker), which restoring needs; use file_storage", id),
			client.Close(ctx))
	}
	return &durable{client: client, walker: w, now: now}, nil
}

// stamp returns a unique, increasing stamp: the time in Unix ns, or one
// more than the last.
func (d *durable) stamp() uint64 {
	n := uint64(max(d.now().UnixNano(), 0))
	for {
		old := d.last.Load()
		v := max(n, old+1)
		if d.last.CompareAndSwap(old, v) {
			return v
		}
	}
}

func chunkKey(prefix string, id pcommon.TraceID, stamp uint64, r route) string {
	var b strings.Builder
	b.Grow(2 + 32 + 1 + 16 + 3)
	b.WriteString(prefix)
	b.WriteString(hex.EncodeToString(id[:]))
	b.WriteByte('/')
	s := strconv.FormatUint(stamp, 16)
	b.WriteString(strings.Repeat("0", 16-len(s)))
	b.WriteString(s)
	b.WriteByte('/')
	b.WriteString(hex.EncodeToString([]byte{byte(r)}))
	return b.String()
}

// parseKey reads a chunk key; ok is false for keys of another kind.
func parseKey(k string) (id pcommon.TraceID, isLogs bool, stamp uint64, r route, ok bool) {
	switch {
	case strings.HasPrefix(k, keyTraces):
	case strings.HasPrefix(k, keyLogs):
		isLogs = true
	default:
		return id, false, 0, 0, false
	}
	rest := k[2:]
	if len(rest) == 32+1+16+3 && rest[49] == '/' {
		var b [1]byte
		if n, err := hex.Decode(b[:], []byte(rest[50:])); err != nil || n != 1 {
			return id, false, 0, 0, false
		}
		r = route(b[0])
		rest = rest[:49]
	}
	if len(rest) != 32+1+16 || rest[32] != '/' {
		return id, false, 0, 0, false
	}
	if n, err := hex.Decode(id[:], []byte(rest[:32])); err != nil || n != 16 {
		return id, false, 0, 0, false
	}
	stamp, err := strconv.ParseUint(rest[33:], 16, 64)
	return id, isLogs, stamp, r, err == nil
}

// persist writes chunks in one batch and gives each its key.
func (d *durable) persist(ctx context.Context, chunks []*chunk) error {
	ops := make([]*storage.Operation, len(chunks))
	var tm ptrace.ProtoMarshaler
	var lm plog.ProtoMarshaler
	for i, c := range chunks {
		var b []byte
		var err error
		prefix := keyTraces
		if c.isLogs {
			prefix = keyLogs
			b, err = lm.MarshalLogs(c.ld)
		} else {
			b, err = tm.MarshalTraces(c.td)
		}
		if err != nil {
			return err
		}
		c.key = chunkKey(prefix, c.id, d.stamp(), c.route)
		ops[i] = storage.SetOperation(c.key, b)
	}
	if err := d.client.Batch(ctx, ops...); err != nil {
		for _, c := range chunks {
			c.key = ""
		}
		return err
	}
	return nil
}

// remove deletes keys in one batch.
func (d *durable) remove(ctx context.Context, keys []string) error {
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.DeleteOperation(k)
	}
	return d.client.Batch(ctx, ops...)
}

// restoredChunk is one chunk read back, with its stamp.
type restoredChunk struct {
	*chunk
	stamp uint64
}

// load reads every chunk the storage holds, by trace id, oldest first. A
// value that does not decode is deleted (logged by the caller, counted).
func (d *durable) load(ctx context.Context) (map[pcommon.TraceID][]restoredChunk, []string, error) {
	byTrace := map[pcommon.TraceID][]restoredChunk{}
	var bad []string
	var tu ptrace.ProtoUnmarshaler
	var lu plog.ProtoUnmarshaler
	err := d.walker.Walk(ctx, func(k string, v []byte) ([]*storage.Operation, error) {
		id, isLogs, stamp, rt, ok := parseKey(k)
		if !ok {
			return nil, nil // not ours
		}
		v = bytes.Clone(v) // valid only within the walk
		var c *chunk
		if isLogs {
			ld, err := lu.UnmarshalLogs(v)
			if err != nil {
				bad = append(bad, k)
				return []*storage.Operation{storage.DeleteOperation(k)}, nil
			}
			c = newLogChunk(id)
			c.ld = ld
			adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
				c.count++
				if adapter.IsGenAIEvent(lr) {
					c.records = append(c.records, lr)
				}
			})
		} else {
			td, err := tu.UnmarshalTraces(v)
			if err != nil {
				bad = append(bad, k)
				return []*storage.Operation{storage.DeleteOperation(k)}, nil
			}
			c = newChunk(id)
			c.td = td
			adapter.ForEachSpan(td, func(ref adapter.SpanRef) {
				c.spans++
				c.refs = append(c.refs, ref)
				if ref.Span.ParentSpanID().IsEmpty() {
					c.root = true
				}
			})
		}
		c.key = k
		c.route = rt
		byTrace[id] = append(byTrace[id], restoredChunk{chunk: c, stamp: stamp})
		if stamp > d.last.Load() {
			d.last.Store(stamp)
		}
		return nil, nil
	})
	for _, cs := range byTrace {
		sort.Slice(cs, func(i, j int) bool { return cs[i].stamp < cs[j].stamp })
	}
	return byTrace, bad, err
}

// restore holds again what the storage holds (called by Start before the
// loop runs). Each trace gets a fresh `wait`; one whose newest chunk is
// older than the bound is queued for the loop to forward unscored. Spans
// repeated across a trace's chunks (persisted twice) are held once.
func (p *evalProcessor) restore(ctx context.Context) error {
	byTrace, bad, err := p.store.load(ctx)
	if err != nil {
		return fmt.Errorf("storage: restoring held traces: %w", err)
	}
	if len(bad) > 0 {
		p.tel.storageErrors.Add(ctx, int64(len(bad)), p.tel.storageOpOpts[storageOpRead])
		p.logger.Error("storage held chunks that do not decode; they are deleted", zap.Int("chunks", len(bad)), zap.Strings("keys", bad))
	}
	if len(byTrace) == 0 {
		return nil
	}
	now := p.clk.now()
	maxAge := max(restoreMaxAgeFactor*p.cfg.Wait, restoreMinMaxAge)
	ids := make([]pcommon.TraceID, 0, len(byTrace))
	for id := range byTrace {
		ids = append(ids, id)
	}
	// Oldest first, so max_traces overflow and release order follow arrival.
	newest := func(id pcommon.TraceID) uint64 { cs := byTrace[id]; return cs[len(cs)-1].stamp }
	sort.Slice(ids, func(i, j int) bool { return newest(ids[i]) < newest(ids[j]) })
	spans, records, redelivered, redeliveredRecords := 0, 0, 0, 0
	// max_traces applies to what is restored too: beyond it the oldest go
	// on unscored first thing (reason overflow), as they would live.
	over := max(len(ids)-p.cfg.MaxTraces, 0)
	for n, id := range ids {
		t := &heldTrace{id: id, first: now, lastSeen: now, restored: map[pcommon.SpanID]struct{}{}, restoredLogs: map[recordKey]struct{}{}}
		for _, c := range byTrace[id] {
			if c.isLogs {
				redeliveredRecords += t.dropRestoredLogs(c.chunk, true)
				t.ingestLogs(c.chunk)
				records += c.count
				continue
			}
			redelivered += t.dropRestored(c.chunk, true)
			t.addChunk(c.chunk)
			spans += c.spans
		}
		p.held.adopt(t)
		switch age := time.Duration(uint64(now.UnixNano()) - min(newest(id), uint64(now.UnixNano()))); {
		case age > maxAge:
			p.restoredOld = append(p.restoredOld, t)
		case n < over:
			p.restoredOverflow = append(p.restoredOverflow, t)
		}
	}
	p.tel.tracesHeld.Add(ctx, int64(len(ids)))
	p.tel.restoredTraces.Add(ctx, int64(len(ids)))
	p.tel.restoredSpans.Add(ctx, int64(spans))
	p.tel.restoredRecords.Add(ctx, int64(records))
	if redelivered > 0 {
		p.tel.spansRedelivered.Add(ctx, int64(redelivered))
	}
	if redeliveredRecords > 0 {
		p.tel.recordsRedelivered.Add(ctx, int64(redeliveredRecords))
	}
	p.logger.Info("restored held traces from storage", zap.Int("traces", len(ids)), zap.Int("spans", spans),
		zap.Int("log_records", records), zap.Int("too_old", len(p.restoredOld)), zap.Int("beyond_max_traces", len(p.restoredOverflow)), zap.Duration("max_age", maxAge))
	return nil
}

// addChunk adds a span chunk to t.
func (t *heldTrace) addChunk(c *chunk) {
	if c.spans == 0 {
		if c.key != "" {
			t.parts = append(t.parts, tracePart{route: c.route, key: c.key})
		}
		return
	}
	t.parts = append(t.parts, tracePart{td: c.td, route: c.route, spans: c.spans, key: c.key})
	if t.refs == nil {
		t.refs = c.refs // the chunk is done with: no copy
	} else {
		t.refs = append(t.refs, c.refs...)
	}
	t.spans += c.spans
	t.root = t.root || c.root
}

// dropRestored removes from c the spans t already holds from storage
// (Kafka redelivers the records after the last committed offset). While t
// is being restored (remember), c's spans join the set it checks against;
// spans that arrive live do not, so outside the restored spans every span
// received is forwarded, as without storage. It returns how many it removed.
func (t *heldTrace) dropRestored(c *chunk, remember bool) int {
	if t.restored == nil || c.spans == 0 {
		return 0
	}
	var dups map[pcommon.SpanID]struct{}
	for _, r := range c.refs {
		if _, ok := t.restored[r.Span.SpanID()]; ok {
			if dups == nil {
				dups = map[pcommon.SpanID]struct{}{}
			}
			dups[r.Span.SpanID()] = struct{}{}
		}
	}
	if remember {
		for _, r := range c.refs {
			t.restored[r.Span.SpanID()] = struct{}{}
		}
	}
	if dups == nil {
		return 0
	}
	refs := c.refs[:0]
	c.root = false
	for _, r := range c.refs {
		if _, ok := dups[r.Span.SpanID()]; !ok {
			refs = append(refs, r)
			c.root = c.root || r.Span.ParentSpanID().IsEmpty()
		}
	}
	removed := 0
	c.td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				_, ok := dups[s.SpanID()]
				if ok {
					removed++
				}
				return ok
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	c.refs = refs
	c.spans -= removed
	return removed
}

// recordKey identifies a log record for redelivery: records have no id, so
// it is the span id, the two timestamps and a hash of the attributes and
// body. A redelivered record is byte-for-byte the record restored.
type recordKey struct {
	span    pcommon.SpanID
	ts, obs pcommon.Timestamp
	h       uint64
}

func keyOfRecord(lr plog.LogRecord) recordKey {
	h := fnv.New64a()
	lr.Attributes().Range(func(k string, v pcommon.Value) bool {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(v.AsString()))
		_, _ = h.Write([]byte{0})
		return true
	})
	_, _ = h.Write([]byte(lr.Body().AsString()))
	return recordKey{span: lr.SpanID(), ts: lr.Timestamp(), obs: lr.ObservedTimestamp(), h: h.Sum64()}
}

// dropRestoredLogs is dropRestored for a log chunk: records equal to one
// restored with t are removed (a redelivery), so their content is read and
// forwarded once.
func (t *heldTrace) dropRestoredLogs(c *chunk, remember bool) int {
	if t.restoredLogs == nil || c.count == 0 {
		return 0
	}
	removed := 0
	var fresh []recordKey
	c.ld.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				k := keyOfRecord(lr)
				if _, ok := t.restoredLogs[k]; ok {
					removed++
					return true
				}
				if remember {
					fresh = append(fresh, k)
				}
				return false
			})
			return sl.LogRecords().Len() == 0
		})
		return rl.ScopeLogs().Len() == 0
	})
	for _, k := range fresh {
		t.restoredLogs[k] = struct{}{}
	}
	if removed > 0 {
		c.count -= removed
		c.records = c.records[:0]
		adapter.ForEachLogRecord(c.ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			if adapter.IsGenAIEvent(lr) {
				c.records = append(c.records, lr)
			}
		})
	}
	return removed
}

func keysOf(c *chunk) []string {
	if c.key == "" {
		return nil
	}
	return []string{c.key}
}

// removeKeys deletes the keys of data the next consumer accepted (or
// refused permanently). A failure is logged and counted: the data stays in
// storage and is restored, so delivered again, after the next start.
func (p *evalProcessor) removeKeys(keys []string) {
	if p.store == nil || len(keys) == 0 {
		return
	}
	if err := p.store.remove(context.Background(), keys); err != nil {
		p.tel.storageErrors.Add(context.Background(), 1, p.tel.storageOpOpts[storageOpDelete])
		p.logger.Warn("could not delete released data from storage; it will be restored and forwarded again after a restart",
			zap.Int("chunks", len(keys)), zap.Error(err))
	}
}

// persistChunks persists the chunks of one ConsumeTraces/ConsumeLogs call
// when storage is configured. On failure nothing of the call is held or
// forwarded: the caller gets a retryable error and sends it all again.
func (p *evalProcessor) persistChunks(ctx context.Context, chunks []*chunk) error {
	if p.store == nil {
		return nil
	}
	if err := p.store.persist(ctx, chunks); err != nil {
		p.tel.storageErrors.Add(ctx, 1, p.tel.storageOpOpts[storageOpWrite])
		if p.storageLogged.CompareAndSwap(false, true) {
			p.logger.Error("could not persist held data; the batch is refused with a retryable error (further failures are logged at debug level)", zap.Error(err))
		} else if ce := p.logger.Check(zap.DebugLevel, "could not persist held data"); ce != nil {
			ce.Write(zap.Error(err))
		}
		return fmt.Errorf("eval processor: persisting held data: %w", err)
	}
	p.storageLogged.Store(false)
	return nil
}
