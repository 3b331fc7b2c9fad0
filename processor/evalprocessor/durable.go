package evalprocessor

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/storageext"
)

// The durable hold store (docs/contract.md §12, `storage:`): one part with
// one owner, holdStore. It owns the keys, the encoding, the I/O and the
// recovery (durable_restore.go); the rest of the processor asks it to
// persist the chunks of a call (persistChunks), to forget released ones
// (removeKeys), and at Start for what it holds, which it hands to the
// loop's normal ingest path chunk by chunk.
//
// Every chunk that is held is written to the storage extension before
// ConsumeTraces or ConsumeLogs returns, so a receiver that acknowledges (or,
// for Kafka, commits its offset) after the call acknowledges only what is
// persisted. A chunk's key is deleted once the next consumer has accepted
// the released data it belongs to.
//
// Layout: one key per chunk, "t/<stamp>/<trace id hex>/<route>" (spans) or
// "l/<stamp>/<trace id hex>/<route>" (log records), where stamp is 16 hex
// digits of the persisting time in Unix ns, made unique and increasing,
// and route 2 hex digits: the pipeline it came in through (routes.go).
// Keys of earlier versions ("t/<trace id hex>/<stamp>[/<route>]", route 0
// without it) are read too (parseKey). In stream mode (§26) what is kept
// of a trace per call, its keptPart, is stored under "k/<stamp>/<trace id
// hex>/<route>" instead, its value formatKept and the part's own encoding
// (durable_kept.go: the GenAI spans or records are already compressed).
// A hold chunk's value is the chunk's
// OTLP protobuf (ExportTraceServiceRequest or ExportLogsServiceRequest), as
// earlier versions wrote it, or formatS2 followed by that protobuf
// compressed as an S2 block (what this version writes). Every key is
// self-describing, so there is no index to keep in step: a crash at any
// point leaves whole chunks or none, and Start finds them with
// storage.Walker (file_storage implements it; a storage extension whose
// client does not fails Start).
//
// Cost (docs/performance.md): the chunks of one call go in one storage
// Batch (one transaction in file_storage), shared with the calls that
// persist at the same time (group commit, holdStore.commit); a chunk's
// protobuf is written into a buffer the store reuses (protoWriter,
// durable_proto.go: the bytes pdata writes, without its allocation per
// value); values are compressed (into reused buffers with file_storage),
// so the storage writes (and copies into its pages) a fraction of the
// bytes; deletes wait for a write's transaction instead of taking one of
// their own, and a write takes them only once they have waited
// deleteBatchAge (at most deleteDelay in all), so one transaction deletes
// a run of the oldest keys and the storage frees whole pages instead of
// rewriting pages it emptied in part.

const (
	keyTraces = "t/"
	keyLogs   = "l/"
	keyKept   = "k/"
	// formatS2 starts a value that is an S2 block of the chunk's protobuf.
	// An OTLP request's protobuf never starts with it (field number 0 is
	// invalid), so values of earlier versions read as before.
	formatS2 byte = 0x01
	// deleteDelay bounds how long deletes of released chunks wait for a
	// write to share its transaction with.
	deleteDelay = 50 * time.Millisecond
	// deleteBatchAge and deleteBatchMax: a write takes the deletes waiting
	// once the oldest has waited this long, or this many wait.
	deleteBatchAge = 20 * time.Millisecond
	deleteBatchMax = 4096
	// maxPooledBuf: encoding buffers above this size are not kept for reuse.
	maxPooledBuf = 8 << 20
)

// holdStore is the processor's storage client with the key scheme, the
// encoding, group commit and recovery.
type holdStore struct {
	client storage.Client
	walker storage.Walker
	now    func() time.Time
	last   atomic.Uint64 // last stamp handed out
	logger *zap.Logger
	tel    *telemetry
	// writeLogged: the first write failure of a run is logged as an error,
	// the rest at debug level until a write succeeds.
	writeLogged atomic.Bool

	// Group commit. mu guards waiting (calls whose operations go in the
	// next batch), writing (a call is writing a batch now), dels (keys of
	// released chunks waiting for a batch) and flush (the timer that writes
	// dels when no call does).
	mu      sync.Mutex
	waiting []*commitReq
	writing bool
	dels    []string
	flush   *time.Timer
	closed  bool
	// delsFrom is when the oldest of dels was released; flushDue: the
	// timer fired while a batch was being written, so the next one takes
	// dels.
	delsFrom time.Time
	flushDue bool
	// deleteDelay and deleteBatchAge (tests change them).
	delay, batchAge time.Duration

	// encs are encoders (*encoder): their protobuf buffers are reused,
	// and the buffers the values go into too when reuseBufs: only with
	// file_storage, whose bbolt copies the values into its pages when the
	// transaction commits (the storage API leaves open whether a client
	// may keep a value's slice).
	encs      sync.Pool
	reuseBufs bool

	// Joint keys (joint): tokens that stand for keys to delete once
	// every one of several deliveries is done.
	jointMu  sync.Mutex
	joints   map[string]*jointKeys
	jointSeq uint64
}

// commitReq is one call's operations waiting in a group commit.
type commitReq struct {
	ops  []*storage.Operation
	done chan error    // its result, once the batch holding it is written
	lead chan struct{} // it is to write the next batch
}

// openStore gets the storage client of extension id from host.
func openStore(ctx context.Context, host component.Host, id, self component.ID, now func() time.Time, logger *zap.Logger, tel *telemetry) (*holdStore, error) {
	client, err := storageext.Client(ctx, host, "storage", id, component.KindProcessor, self, "")
	if err != nil {
		return nil, err
	}
	w, ok := client.(storage.Walker)
	if !ok {
		return nil, errors.Join(
			fmt.Errorf("storage: extension %q cannot list its keys (its client does not implement storage.Walker), which restoring needs; use file_storage", id),
			client.Close(ctx))
	}
	return &holdStore{client: client, walker: w, now: now, logger: logger, tel: tel,
		reuseBufs: id.Type().String() == "file_storage", delay: deleteDelay, batchAge: deleteBatchAge}, nil
}

// stamp returns a unique, increasing stamp: the time in Unix ns, or one
// more than the last.
func (s *holdStore) stamp() uint64 {
	n := uint64(max(s.now().UnixNano(), 0))
	for {
		old := s.last.Load()
		v := max(n, old+1)
		if s.last.CompareAndSwap(old, v) {
			return v
		}
	}
}

// chunkKey is "<prefix><stamp, 16 hex digits>/<trace id hex>/<route, 2 hex
// digits>". The stamp comes first so that the storage's B-tree (bbolt in
// file_storage) takes writes at one end and deletes, mostly of the
// oldest, at the other, touching few pages per transaction whatever the
// trace ids (keys led by random trace ids cost 5-7 times as much a write).
func chunkKey(prefix string, id pcommon.TraceID, stamp uint64, r route) string {
	var b [2 + 16 + 1 + 32 + 1 + 2]byte
	copy(b[:], prefix)
	for i := 17; i > 1; i-- {
		b[i] = "0123456789abcdef"[stamp&0xf]
		stamp >>= 4
	}
	b[18] = '/'
	hex.Encode(b[19:51], id[:])
	b[51] = '/'
	hex.Encode(b[52:], []byte{byte(r)})
	return string(b[:])
}

// keyKind is what a key holds: a hold-mode chunk of spans or of log
// records, or a stream-mode kept part (either signal: its value says).
type keyKind uint8

const (
	kindSpans keyKind = iota
	kindLogs
	kindKept
)

// parseKey reads a chunk key, in this version's layout or an earlier one's
// ("<prefix><trace id hex>/<stamp>", with "/<route>" or without); ok is
// false for keys of another kind.
func parseKey(k string) (id pcommon.TraceID, kind keyKind, stamp uint64, r route, ok bool) {
	switch {
	case strings.HasPrefix(k, keyTraces):
		kind = kindSpans
	case strings.HasPrefix(k, keyLogs):
		kind = kindLogs
	case strings.HasPrefix(k, keyKept):
		kind = kindKept
	default:
		return id, 0, 0, 0, false
	}
	rest := k[2:]
	var idHex, stampHex, routeHex string
	switch {
	case len(rest) == 16+1+32+1+2 && rest[16] == '/' && rest[49] == '/':
		stampHex, idHex, routeHex = rest[:16], rest[17:49], rest[50:]
	case len(rest) == 32+1+16+1+2 && rest[32] == '/' && rest[49] == '/':
		idHex, stampHex, routeHex = rest[:32], rest[33:49], rest[50:]
	case len(rest) == 32+1+16 && rest[32] == '/':
		idHex, stampHex = rest[:32], rest[33:]
	default:
		return id, 0, 0, 0, false
	}
	if routeHex != "" {
		var b [1]byte
		if n, err := hex.Decode(b[:], []byte(routeHex)); err != nil || n != 1 {
			return id, 0, 0, 0, false
		}
		r = route(b[0])
	}
	if n, err := hex.Decode(id[:], []byte(idHex)); err != nil || n != 16 {
		return id, 0, 0, 0, false
	}
	stamp, err := strconv.ParseUint(stampHex, 16, 64)
	return id, kind, stamp, r, err == nil
}

// encoder encodes the values of one persist call: its protobuf writer and
// the buffer the values go into are reused across calls.
type encoder struct {
	w   protoWriter
	out []byte
}

// encode appends c's value (formatS2 and the compressed protobuf) to e.out
// and returns it. When e.out has no room, it continues in a new buffer:
// values already handed out keep the old one.
func (e *encoder) encode(c *chunk) []byte {
	var raw []byte
	if c.isLogs {
		raw = e.w.marshalLogs(c.ld, c.logsShared)
	} else {
		raw = e.w.marshalTraces(c.td, c.shared)
	}
	need := 1 + s2.MaxEncodedLen(len(raw))
	buf := e.out
	if cap(buf)-len(buf) < need {
		buf = make([]byte, 0, max(2*cap(buf), need, 64<<10))
	}
	val := buf[len(buf) : len(buf)+need]
	val[0] = formatS2
	enc := s2.Encode(val[1:], raw) // within val: it is large enough
	val = val[:1+len(enc)]
	e.out = buf[:len(buf)+len(val)]
	return val
}

// decodeValue returns the protobuf of a stored value (a new slice: v may be
// valid only during a walk).
func decodeValue(v []byte) ([]byte, error) {
	if len(v) > 0 && v[0] == formatS2 {
		return s2.Decode(nil, v[1:])
	}
	return append([]byte(nil), v...), nil
}

// persist writes chunks in one batch (shared with concurrent calls) and
// gives each its key; it returns once they are written.
func (s *holdStore) persist(ctx context.Context, chunks []*chunk) error {
	e, _ := s.encs.Get().(*encoder)
	if e == nil {
		e = &encoder{}
	}
	e.out = e.out[:0]
	ops := make([]*storage.Operation, len(chunks))
	opv := make([]storage.Operation, len(chunks))
	for i, c := range chunks {
		prefix, encode := keyTraces, e.encode
		switch {
		case c.kept != nil:
			prefix, encode = keyKept, e.encodeKept
		case c.isLogs:
			prefix = keyLogs
		}
		c.key = chunkKey(prefix, c.id, s.stamp(), c.route)
		opv[i] = storage.Operation{Type: storage.Set, Key: c.key, Value: encode(c)}
		ops[i] = &opv[i]
	}
	err := s.commit(ctx, ops)
	// Written (or not at all): with file_storage, bbolt has copied the
	// values; other clients may keep them.
	if !s.reuseBufs || cap(e.out) > maxPooledBuf {
		e.out = nil
	}
	if cap(e.w.buf) > maxPooledBuf {
		e.w.buf = nil
	}
	s.encs.Put(e)
	if err != nil {
		for _, c := range chunks {
			c.key = ""
		}
	}
	return err
}

// remove deletes keys of released chunks with the next write's batch, or
// within deleteDelay when none comes. A failure is logged and counted: the
// data stays in storage and is restored, so delivered again, after the
// next start.
func (s *holdStore) remove(keys []string) {
	if keys = s.resolve(keys); len(keys) == 0 {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.deleteNow(keys)
		return
	}
	if s.dels == nil {
		s.delsFrom = time.Now()
	}
	s.dels = append(s.dels, keys...)
	if s.flush == nil {
		s.flush = time.AfterFunc(s.delay, s.flushDeletes)
	}
	s.mu.Unlock()
}

// flushDeletes writes the deletes still waiting (no write took them).
func (s *holdStore) flushDeletes() {
	s.mu.Lock()
	pending := s.dels != nil && !s.writing
	if !pending {
		s.flush = nil // a write under way takes them, or none wait
		s.flushDue = s.dels != nil
	}
	s.mu.Unlock()
	if pending {
		_ = s.commit(context.Background(), nil)
	}
}

// deleteNow deletes keys in a batch of their own.
func (s *holdStore) deleteNow(keys []string) {
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.DeleteOperation(k)
	}
	if err := s.client.Batch(context.Background(), ops...); err != nil {
		s.tel.storageErrors.Add(context.Background(), 1, s.tel.storageOpOpts[storageOpDelete])
		s.logger.Warn("could not delete released data from storage; it will be restored and forwarded again after a restart",
			zap.Int("chunks", len(keys)), zap.Error(err))
	}
}

// commit writes ops (and the deletes waiting) in one storage transaction
// and returns once they are written, or with the error that kept them
// from it. Calls that come while another call's batch is being written
// wait and then go together in one batch, written by the first of them
// (group commit): one transaction for many requests, each still
// acknowledged only after its own data is written. When a grouped batch
// fails, each call's operations are tried alone, so each call gets its own
// answer.
func (s *holdStore) commit(ctx context.Context, ops []*storage.Operation) error {
	c := &commitReq{ops: ops, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	s.mu.Lock()
	s.waiting = append(s.waiting, c)
	if s.writing {
		s.mu.Unlock()
		select {
		case err := <-c.done:
			return err
		case <-c.lead:
		}
		s.mu.Lock()
	}
	s.writing = true
	group := s.waiting
	s.waiting = nil
	var dels []string
	if s.dels != nil && s.takeDeletes(group) {
		dels, s.dels, s.flushDue = s.dels, nil, false
		if s.flush != nil {
			s.flush.Stop()
			s.flush = nil
		}
	}
	s.mu.Unlock()

	s.write(ctx, group, dels)

	s.mu.Lock()
	if len(s.waiting) > 0 {
		s.waiting[0].lead <- struct{}{} // the next batch is its to write
	} else {
		s.writing = false
		if s.dels != nil && s.flush == nil && !s.closed {
			s.flush = time.AfterFunc(max(s.delay-time.Since(s.delsFrom), 0), s.flushDeletes)
		}
	}
	s.mu.Unlock()
	return <-c.done
}

// takeDeletes tells whether the batch of group takes the deletes waiting:
// when they have waited deleteBatchAge, or are many, or the batch is a
// flush. Deletes of one batch then span whole runs of the oldest keys, so
// the storage frees their pages instead of rewriting them partly emptied
// (file_storage's B-tree is ordered by the keys' stamps). s.mu is held.
func (s *holdStore) takeDeletes(group []*commitReq) bool {
	if s.flushDue || len(s.dels) >= deleteBatchMax || time.Since(s.delsFrom) >= s.batchAge {
		return true
	}
	for _, c := range group {
		if c.ops == nil {
			return true
		}
	}
	return false
}

// write writes a group's operations and the deletes in one batch and
// answers every call.
func (s *holdStore) write(ctx context.Context, group []*commitReq, dels []string) {
	n := len(dels)
	for _, c := range group {
		n += len(c.ops)
	}
	all := make([]*storage.Operation, 0, n)
	for _, c := range group {
		all = append(all, c.ops...)
	}
	delOps := make([]storage.Operation, len(dels)) // one allocation for all
	for i, k := range dels {
		delOps[i] = storage.Operation{Type: storage.Delete, Key: k}
		all = append(all, &delOps[i])
	}
	// Not the writing call's cancellation: the batch is the others' too.
	ctx = context.WithoutCancel(ctx)
	if len(all) == 0 {
		for _, c := range group {
			c.done <- nil
		}
		return
	}
	err := s.client.Batch(ctx, all...)
	if err == nil {
		for _, c := range group {
			c.done <- nil
		}
		return
	}
	if len(group) == 1 && len(dels) == 0 {
		group[0].done <- err
		return
	}
	for _, c := range group {
		if len(c.ops) == 0 {
			c.done <- nil
			continue
		}
		c.done <- s.client.Batch(ctx, c.ops...)
	}
	if len(dels) > 0 {
		s.deleteNow(dels)
	}
}

// close writes the deletes still waiting and closes the client (what it
// holds stays for the next start).
func (s *holdStore) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	if s.flush != nil {
		s.flush.Stop()
		s.flush = nil
	}
	s.mu.Unlock()
	_ = s.commit(ctx, nil) // the deletes still waiting
	err := s.client.Close(ctx)
	if err != nil {
		err = fmt.Errorf("storage: closing the client: %w", err)
	}
	return err
}

// The processor's side: what ConsumeTraces/ConsumeLogs and the forwarder
// ask of the store.

// persistChunks persists the chunks of one ConsumeTraces/ConsumeLogs call
// when storage is configured. On failure nothing of the call is held or
// forwarded: the caller gets a retryable error and sends it all again.
func (p *evalProcessor) persistChunks(ctx context.Context, chunks []*chunk) error {
	if p.store == nil {
		return nil
	}
	return p.store.persistOrCount(ctx, chunks)
}

func (s *holdStore) persistOrCount(ctx context.Context, chunks []*chunk) error {
	if err := s.persist(ctx, chunks); err != nil {
		s.tel.storageErrors.Add(ctx, 1, s.tel.storageOpOpts[storageOpWrite])
		if s.writeLogged.CompareAndSwap(false, true) {
			s.logger.Error("could not persist held data; the batch is refused with a retryable error (further failures are logged at debug level)", zap.Error(err))
		} else if ce := s.logger.Check(zap.DebugLevel, "could not persist held data"); ce != nil {
			ce.Write(zap.Error(err))
		}
		return fmt.Errorf("eval processor: persisting held data: %w", err)
	}
	s.writeLogged.Store(false)
	return nil
}

// removeKeys forgets the keys of data the next consumer accepted (or
// refused permanently); see holdStore.remove.
func (p *evalProcessor) removeKeys(keys []string) {
	if p.store == nil {
		return
	}
	p.store.remove(keys)
}

func keysOf(c *chunk) []string {
	if c.key == "" {
		return nil
	}
	return []string{c.key}
}

// closeStore closes the storage client (what it holds stays for the next
// start).
func (p *evalProcessor) closeStore(ctx context.Context) error {
	if p.store == nil {
		return nil
	}
	return p.store.close(ctx)
}
