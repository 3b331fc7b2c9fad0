package evalprocessor

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
)

// Recovery: on Start, what the store holds is held again, streamed.
//
//  1. scan walks the keys only (no value is decoded) and groups them by
//     trace: per chunk its key, per trace its newest stamp. A failure here
//     fails Start, before anything runs.
//  2. restore, once the workers and the forwarder run, reads the traces
//     oldest first (by their newest chunk) in bounded batches of keys,
//     decodes them and hands each trace's chunks to the loop's normal
//     ingest path (ingestMsg.restored), which holds them with a fresh
//     `wait`, drops spans repeated across chunks, and applies max_traces
//     as for live data: beyond it the oldest go on unscored (overflow)
//     while the rest is still being read, so at most max_traces restored
//     traces are in memory. A trace whose newest chunk is older than the
//     bound goes on unscored at once (ingestMsg.unscored, reason too_old).
//
// Spans that Kafka redelivers after the restart join their trace: for a
// restored trace the loop remembers the span ids (and log record keys) it
// restored, and drops copies of them (dropRestored, dropRestoredLogs).
// In stream mode the restored chunks are kept parts (durable_kept.go), and
// redelivered spans go on again (they may not have reached the next
// consumer); what they keep joins the trace, and scoring drops the copies.
// What the other mode wrote is first made this mode's (forMode).

const (
	// restoreMaxAgeFactor: a restored trace whose newest chunk was
	// persisted more than this many `wait`s ago (and at least
	// restoreMinMaxAge) is forwarded unscored, reason too_old: the
	// collector was down long enough that its scores would come late
	// anyway, and holding it again would delay its spans further.
	restoreMaxAgeFactor = 10
	restoreMinMaxAge    = time.Minute
	reasonTooOld        = "too_old"
	// restoreBatchKeys bounds the chunks read in one storage batch.
	restoreBatchKeys = 256
	// maxLoggedKeys bounds the keys named in a log line.
	maxLoggedKeys = 10
)

// storedTrace is one trace the store holds, as scan found it.
type storedTrace struct {
	id     pcommon.TraceID
	newest uint64   // its newest chunk's stamp
	keys   []string // its chunks' keys, oldest first
}

// scan lists the traces the store holds, oldest (by newest chunk) first,
// reading keys only.
func (s *holdStore) scan(ctx context.Context) ([]storedTrace, error) {
	type storedKey struct {
		key   string
		stamp uint64
	}
	byTrace := map[pcommon.TraceID][]storedKey{}
	err := s.walker.Walk(ctx, func(k string, _ []byte) ([]*storage.Operation, error) {
		id, _, stamp, _, ok := parseKey(k)
		if !ok {
			return nil, nil // not ours
		}
		byTrace[id] = append(byTrace[id], storedKey{key: k, stamp: stamp})
		if stamp > s.last.Load() {
			s.last.Store(stamp)
		}
		return nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: restoring held traces: %w", err)
	}
	out := make([]storedTrace, 0, len(byTrace))
	for id, ks := range byTrace {
		slices.SortFunc(ks, func(a, b storedKey) int { return cmpUint(a.stamp, b.stamp) })
		st := storedTrace{id: id, newest: ks[len(ks)-1].stamp, keys: make([]string, len(ks))}
		for i, k := range ks {
			st.keys[i] = k.key
		}
		out = append(out, st)
	}
	// Oldest first, so max_traces overflow and release order follow arrival.
	slices.SortFunc(out, func(a, b storedTrace) int { return cmpUint(a.newest, b.newest) })
	return out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// restoreStats is what restore handed over.
type restoreStats struct {
	traces, spans, records, tooOld int
	bad                            []string // keys whose value did not decode (deleted)
	readErr                        error    // a batch that could not be read (left in storage)
}

// restore reads the traces scan found, restoreBatchKeys chunks at a time,
// decodes them and hands each trace's chunks to hand, oldest first; tooOld
// is set for a trace whose newest chunk is older than maxAge at now. A
// value that does not decode is deleted; a batch that cannot be read is
// left in storage (restored on the next start).
func (s *holdStore) restore(ctx context.Context, traces []storedTrace, now time.Time, maxAge time.Duration, hand func(chunks []*chunk, tooOld bool)) restoreStats {
	var st restoreStats
	nowNs := uint64(max(now.UnixNano(), 0))
	for len(traces) > 0 {
		n, keys := 0, 0
		for n < len(traces) && (n == 0 || keys+len(traces[n].keys) <= restoreBatchKeys) {
			keys += len(traces[n].keys)
			n++
		}
		batch := traces[:n]
		traces = traces[n:]
		ops := make([]*storage.Operation, 0, keys)
		for _, t := range batch {
			for _, k := range t.keys {
				ops = append(ops, storage.GetOperation(k))
			}
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			st.readErr = err
			continue
		}
		for _, t := range batch {
			var chunks []*chunk
			for _, op := range ops[:len(t.keys)] {
				c, err := decodeChunk(op.Key, op.Value)
				switch {
				case err != nil:
					st.bad = append(st.bad, op.Key)
				case c != nil:
					chunks = append(chunks, c)
				}
			}
			ops = ops[len(t.keys):]
			if len(chunks) == 0 {
				continue
			}
			tooOld := time.Duration(nowNs-min(t.newest, nowNs)) > maxAge
			st.traces++
			if tooOld {
				st.tooOld++
			}
			hand(chunks, tooOld)
			for _, c := range chunks {
				st.spans += c.spans // less what the loop found twice
				st.records += c.count
			}
		}
	}
	if len(st.bad) > 0 {
		ops := make([]*storage.Operation, len(st.bad))
		for i, k := range st.bad {
			ops[i] = storage.DeleteOperation(k)
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			s.tel.storageErrors.Add(ctx, 1, s.tel.storageOpOpts[storageOpDelete])
		}
	}
	return st
}

// decodeChunk makes a held chunk of a stored value; nil, nil when the
// value is gone.
func decodeChunk(k string, v []byte) (*chunk, error) {
	id, kind, _, rt, _ := parseKey(k)
	if v == nil {
		return nil, nil
	}
	if kind == kindKept {
		return decodeKeptChunk(id, k, rt, v)
	}
	isLogs := kind == kindLogs
	raw, err := decodeValue(v)
	if err != nil {
		return nil, err
	}
	// Restored items are held again: intern their repeats as on ingest.
	in := getInterner()
	defer in.release()
	var c *chunk
	if isLogs {
		var u plog.ProtoUnmarshaler
		ld, err := u.UnmarshalLogs(raw)
		if err != nil {
			return nil, err
		}
		c = newLogChunk(id)
		c.ld = ld
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			in.resource(ld.ResourceLogs().At(i).Resource())
		}
		adapter.ForEachLogRecord(ld, func(lr plog.LogRecord, _ plog.ResourceLogs, _ plog.ScopeLogs) {
			c.count++
			in.logRecord(lr)
			if adapter.IsGenAIEvent(lr) {
				c.records = append(c.records, lr)
			}
		})
	} else {
		var u ptrace.ProtoUnmarshaler
		td, err := u.UnmarshalTraces(raw)
		if err != nil {
			return nil, err
		}
		c = newChunk(id)
		c.td = td
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			in.resource(td.ResourceSpans().At(i).Resource())
		}
		adapter.ForEachSpan(td, func(ref adapter.SpanRef) { c.added(ref.Span, true, in) })
	}
	c.key = k
	c.route = rt
	return c, nil
}

// restoreHeld hands what the store holds (scan's traces) to the loop's
// ingest path. Start calls it once the workers and the forwarder run and
// before the loop does (so ingest runs on Start's goroutine) and before
// any ConsumeTraces.
func (p *evalProcessor) restoreHeld(ctx context.Context, traces []storedTrace) {
	if len(traces) == 0 {
		return
	}
	maxAge := max(restoreMaxAgeFactor*p.cfg.Wait, restoreMinMaxAge)
	var mix restoredMix // what the other mode wrote (durable_kept.go)
	st := p.store.restore(ctx, traces, p.clk.now(), maxAge, func(chunks []*chunk, tooOld bool) {
		m := ingestMsg{chunks: p.forMode(chunks, &mix), restored: true}
		if tooOld {
			m.unscored = reasonTooOld
		}
		p.ingest(m)
	})
	mix.log(p.logger, p.streaming)
	if len(st.bad) > 0 {
		p.tel.storageErrors.Add(ctx, int64(len(st.bad)), p.tel.storageOpOpts[storageOpRead])
		p.logger.Error("storage held chunks that do not decode; they are deleted", zap.Int("chunks", len(st.bad)),
			zap.Strings("keys", st.bad[:min(len(st.bad), maxLoggedKeys)]))
	}
	if st.readErr != nil {
		p.tel.storageErrors.Add(ctx, 1, p.tel.storageOpOpts[storageOpRead])
		p.logger.Error("some held chunks could not be read from storage; they stay there and are restored on the next start", zap.Error(st.readErr))
	}
	p.tel.restoredTraces.Add(ctx, int64(st.traces))
	p.tel.restoredSpans.Add(ctx, int64(st.spans))
	p.tel.restoredRecords.Add(ctx, int64(st.records))
	p.logger.Info("restored held traces from storage", zap.Int("traces", st.traces), zap.Int("spans", st.spans),
		zap.Int("log_records", st.records), zap.Int("too_old", st.tooOld),
		zap.Int("beyond_max_traces", max(st.traces-st.tooOld-p.cfg.MaxTraces, 0)), zap.Duration("max_age", maxAge))
}

// startRestore marks t as restored: the spans and log records its
// restored chunks bring are remembered, so redelivered copies are dropped.
func (t *heldTrace) startRestore() {
	t.restored = map[pcommon.SpanID]struct{}{}
	t.restoredLogs = map[recordKey]struct{}{}
}

// addChunk adds a span chunk to t.
func (t *heldTrace) addChunk(c *chunk) {
	if c.spans == 0 {
		if c.key != "" {
			t.parts = append(t.parts, tracePart{route: c.route, key: c.key})
		}
		return
	}
	t.parts = append(t.parts, tracePart{td: c.td, shared: c.shared, route: c.route, spans: c.spans, key: c.key})
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
	adapter.ForEachSpan(c.td, func(r adapter.SpanRef) {
		if _, ok := t.restored[r.Span.SpanID()]; ok {
			if dups == nil {
				dups = map[pcommon.SpanID]struct{}{}
			}
			dups[r.Span.SpanID()] = struct{}{}
		}
	})
	if remember {
		adapter.ForEachSpan(c.td, func(r adapter.SpanRef) { t.restored[r.Span.SpanID()] = struct{}{} })
	}
	if dups == nil {
		return 0
	}
	c.root = false
	removed := 0
	c.materialize() // ResourceSpans may go: the list of shared resources would not follow
	c.td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				_, ok := dups[s.SpanID()]
				if ok {
					removed++
				} else {
					c.root = c.root || s.ParentSpanID().IsEmpty()
				}
				return ok
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
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
	c.materializeLogs() // ResourceLogs may go: the list of shared resources would not follow
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
