package evalprocessor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
)

// Durable holding in stream mode (docs/contract.md §26, `storage:`): what
// the processor keeps of a GenAI trace per consume call, its keptPart
// (streamkept.go), is persisted by the same store as hold mode's chunks
// (holdStore: keys "k/...", group commit, restore), before the call
// forwards anything, so a failed write refuses the call as in hold mode
// and nothing of it went on. The keys are deleted once the trace's
// results (its result spans, one request per route, and its result
// records) have all been accepted by the next consumers (joint keys); a
// restart before that restores the parts and the trace is scored and its
// results emitted then. The original spans went on when they came and are
// never sent again from storage.
//
// A store written by the other mode (a user switched `mode` between
// restarts): a stream-mode processor forwards the spans and log records
// hold mode held (they never went on), as they are, and scores their
// traces from what stream mode keeps of them; their keys go once both the
// originals and the results are accepted. A hold-mode processor cannot
// score kept parts (the spans its results would be written onto went on
// long ago): it deletes them and says so at error level, naming how many
// traces get no results.

// formatKept starts a kept part's value. Neither an OTLP protobuf (field
// number 0 is invalid) nor formatS2.
const formatKept byte = 0x02

// Flags of a kept part's value.
const (
	keptFlagLogs byte = 1 << iota
	keptFlagRoot
)

var errBadKept = errors.New("not a kept part")

// appendTo appends the part's value: formatKept, the flags, then as
// uvarints the items it stands for and the length of packed, packed as it
// is (already compressed), the number of stubs and 16 bytes each (span id,
// parent id). root is the chunk's: the part has a root span.
func (k *keptPart) appendTo(buf []byte, root bool) []byte {
	flags := byte(0)
	if k.isLogs {
		flags |= keptFlagLogs
	}
	if root {
		flags |= keptFlagRoot
	}
	buf = append(buf, formatKept, flags)
	buf = binary.AppendUvarint(buf, uint64(k.n))
	buf = binary.AppendUvarint(buf, uint64(len(k.packed)))
	buf = append(buf, k.packed...)
	buf = binary.AppendUvarint(buf, uint64(len(k.stubs)))
	for _, st := range k.stubs {
		buf = append(buf, st.id[:]...)
		buf = append(buf, st.parent[:]...)
	}
	return buf
}

// keptValueLen is the most appendTo writes for k.
func (k *keptPart) keptValueLen() int {
	return 2 + 3*binary.MaxVarintLen64 + len(k.packed) + 16*len(k.stubs)
}

// decode reads a value appendTo wrote into k (packed is copied: v may be
// valid only during a walk) and returns its root flag.
func (k *keptPart) decode(v []byte) (root bool, err error) {
	if len(v) < 2 || v[0] != formatKept {
		return false, errBadKept
	}
	flags, rest := v[1], v[2:]
	next := func() (uint64, bool) {
		x, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, false
		}
		rest = rest[n:]
		return x, true
	}
	n, ok1 := next()
	plen, ok2 := next()
	if !ok1 || !ok2 || plen > uint64(len(rest)) {
		return false, errBadKept
	}
	packed := rest[:plen]
	rest = rest[plen:]
	stubs, ok := next()
	if !ok || stubs > uint64(len(rest))/16 || uint64(len(rest)) != 16*stubs {
		return false, errBadKept
	}
	if len(packed) > 0 {
		if _, err := s2.DecodedLen(packed); err != nil {
			return false, err
		}
		k.packed = bytes.Clone(packed)
	}
	k.isLogs, k.n = flags&keptFlagLogs != 0, int(n)
	if stubs > 0 {
		k.stubs = make([]spanStub, stubs)
		for i := range k.stubs {
			copy(k.stubs[i].id[:], rest[16*i:])
			copy(k.stubs[i].parent[:], rest[16*i+8:])
		}
	}
	return flags&keptFlagRoot != 0, nil
}

// encodeKept is encode for a stream-mode chunk: its kept part's value,
// appended to e.out (in a new buffer when e.out has no room: values
// already handed out keep the old one).
func (e *encoder) encodeKept(c *chunk) []byte {
	need := c.kept.keptValueLen()
	buf := e.out
	if cap(buf)-len(buf) < need {
		buf = make([]byte, 0, max(2*cap(buf), need, 64<<10))
	}
	start := len(buf)
	buf = c.kept.appendTo(buf, c.root)
	e.out = buf
	return buf[start:len(buf):len(buf)]
}

// decodeKeptChunk makes a stream-mode chunk of a stored kept part.
func decodeKeptChunk(id pcommon.TraceID, key string, rt route, v []byte) (*chunk, error) {
	c := &chunk{id: id, route: rt, key: key, kept: &keptPart{route: rt}}
	root, err := c.kept.decode(v)
	if err != nil {
		return nil, err
	}
	c.isLogs, c.root = c.kept.isLogs, root
	if c.isLogs {
		c.count = c.kept.n
	} else {
		c.spans = c.kept.n
	}
	return c, nil
}

// persistKept persists what a stream-mode call keeps (storage:), packed
// first: the value is the packed part.
func (p *evalProcessor) persistKept(ctx context.Context, chunks []*chunk) error {
	if p.store == nil || len(chunks) == 0 {
		return nil
	}
	packAll(chunks)
	return p.persistChunks(ctx, chunks)
}

// Joint keys: the keys of a trace whose data goes on in several
// deliveries (result spans per route, result records; restored originals)
// are deleted once every one of them is done. Each delivery carries the
// same token in its keys; the forwarder hands it to remove when the
// delivery is accepted (or dropped for good) like any key, and the last
// one brings the keys. A token may stand for tokens.

// jointPrefix starts a token: no storage key starts with it.
const jointPrefix = "\x00joint/"

type jointKeys struct {
	left int
	keys []string
}

// joint returns the token of keys for parts deliveries.
func (s *holdStore) joint(keys []string, parts int) string {
	s.jointMu.Lock()
	defer s.jointMu.Unlock()
	if s.joints == nil {
		s.joints = map[string]*jointKeys{}
	}
	s.jointSeq++
	tok := jointPrefix + strconv.FormatUint(s.jointSeq, 16)
	s.joints[tok] = &jointKeys{left: parts, keys: keys}
	return tok
}

// resolve returns keys with each token replaced by its keys when this was
// its last delivery, and left out otherwise.
func (s *holdStore) resolve(keys []string) []string {
	i := 0
	for i < len(keys) && !strings.HasPrefix(keys[i], jointPrefix) {
		i++
	}
	if i == len(keys) {
		return keys
	}
	out := append([]string(nil), keys[:i]...)
	keys = keys[i:]
	s.jointMu.Lock()
	defer s.jointMu.Unlock()
	for len(keys) > 0 {
		var next []string
		for _, k := range keys {
			if !strings.HasPrefix(k, jointPrefix) {
				out = append(out, k)
				continue
			}
			j := s.joints[k]
			if j == nil {
				continue
			}
			if j.left--; j.left <= 0 {
				delete(s.joints, k)
				next = append(next, j.keys...)
			}
		}
		keys = next
	}
	return out
}

// keysWithResults gives the storage keys of released stream-mode trace t
// to what goes on for it now, its result spans and result records, so
// they are deleted once all of it is accepted. With nothing to go on they
// are deleted now, except when Shutdown's time was up before t was
// scored: then they stay, and the next start scores it.
func (p *evalProcessor) keysWithResults(t *heldTrace, reason string) {
	keys := t.keptKeys
	t.keptKeys = nil
	if len(keys) == 0 || p.store == nil {
		return
	}
	parts := len(t.resultSpans)
	if t.resultN > 0 {
		parts++
	}
	if parts == 0 {
		if reason != reasonShutdown {
			p.removeKeys(keys)
		}
		return
	}
	tok := p.store.joint(keys, parts)
	for i := range t.resultSpans {
		t.resultSpans[i].keys = append(t.resultSpans[i].keys, tok)
	}
	if t.resultN > 0 {
		// forwardLogs merges the result records into its first part.
		t.logParts = append(t.logParts, logPartHeld{key: tok})
	}
}

// keepKey adds a stream-mode chunk's storage key to its trace.
func (t *heldTrace) keepKey(c *chunk) {
	if c.key != "" {
		t.keptKeys = append(t.keptKeys, c.key)
	}
}

// restoredMix counts, at a restore, what the other mode wrote.
type restoredMix struct {
	holdChunks, holdSpans, holdRecords int // by hold mode, restored in stream mode
	keptParts, keptSpans, keptRecords  int // by stream mode, restored in hold mode
	keptTraces                         map[pcommon.TraceID]struct{}
}

// forMode returns the restored chunks of one trace as this mode holds
// them: a stream-mode processor forwards a hold chunk's items now and
// keeps what stream mode keeps of them (keepRestored); a hold-mode
// processor deletes kept parts.
func (p *evalProcessor) forMode(chunks []*chunk, mix *restoredMix) []*chunk {
	out := make([]*chunk, 0, len(chunks))
	for _, c := range chunks {
		switch {
		case (c.kept != nil) == p.streaming:
			out = append(out, c)
		case p.streaming:
			mix.holdChunks++
			mix.holdSpans += c.spans
			mix.holdRecords += c.count
			if k := p.keepRestored(c); k != nil {
				out = append(out, k)
			}
		default:
			mix.keptParts++
			mix.keptSpans += c.spans
			if c.isLogs {
				mix.keptRecords += c.count
			}
			if mix.keptTraces == nil {
				mix.keptTraces = map[pcommon.TraceID]struct{}{}
			}
			mix.keptTraces[c.id] = struct{}{}
			p.removeKeys(keysOf(c))
		}
	}
	return out
}

// keepRestored forwards the items of a hold chunk restored in stream mode
// and returns what stream mode keeps of them (nil: nothing, as for log
// records that are not GenAI events). The chunk's key goes once both are
// done with.
func (p *evalProcessor) keepRestored(c *chunk) *chunk {
	dec := map[pcommon.TraceID]decision{c.id: decHold}
	var kept []*chunk
	if c.isLogs {
		kept = keepLogs(c.ld, dec, c.route)
	} else {
		kept = keepSpans(c.td, dec, c.route)
	}
	packAll(kept)
	tok := p.store.joint(keysOf(c), 1+len(kept))
	if c.isLogs {
		p.fwd.pushLogs(routed[plog.Logs]{route: c.route, data: c.ld, n: c.count, keys: []string{tok}})
	} else {
		p.fwd.pushTraces(routedTraces{route: c.route, data: c.td, n: c.spans, keys: []string{tok}})
	}
	if len(kept) == 0 {
		return nil
	}
	kept[0].key = tok
	return kept[0]
}

// log says what a restore found of the other mode.
func (m *restoredMix) log(logger *zap.Logger, streaming bool) {
	if streaming && m.holdChunks > 0 {
		logger.Warn("storage held spans and log records written by mode: hold (mode was switched); this processor runs mode: stream: "+
			"they go on now, as they came, and their traces are scored from what stream mode keeps of them (results as result spans and records)",
			zap.Int("chunks", m.holdChunks), zap.Int("spans", m.holdSpans), zap.Int("log_records", m.holdRecords))
	}
	if !streaming && m.keptParts > 0 {
		logger.Error("storage held the kept state of traces written by mode: stream (mode was switched); their spans went on when they came, "+
			"and mode: hold cannot score a trace without holding its spans: these traces get NO results, and their kept state is deleted",
			zap.Int("traces", len(m.keptTraces)), zap.Int("parts", m.keptParts), zap.Int("spans", m.keptSpans),
			zap.Int("genai_log_records", m.keptRecords))
	}
}
