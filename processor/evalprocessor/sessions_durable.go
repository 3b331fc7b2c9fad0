package evalprocessor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// Durable sessions (`storage:` with a `case: session` evaluator). Each turn
// is written to the storage extension as it is recorded — in the trace's
// scoring, before the trace is released and its own chunks are deleted —
// so a SIGKILL at any point leaves either the trace's chunks (restored and
// scored again: the turn is recorded again, under the same key) or the
// turn. Layout, beside durable.go's "t/" and "l/" chunks and "k/" kept parts:
//
//	s/<session hash>/<trace id hex><span id hex>  one turn (JSON diskTurn)
//	s/<session hash>/scored                       when the session was last scored (JSON)
//
// The session hash is FNV-64a of service and conversation id; every value
// names its session in full, so a collision only shares a prefix. A turn
// max_turns pushes out, and every turn of a session that leaves the store
// beyond max_sessions (once scored), is deleted. At start the turns are
// read back with storage.Walker; a session with a turn recorded after its
// last scoring is pending again.

const (
	keySessions  = "s/"
	keyScoredSfx = "scored"
	// sessionStorageWarnEvery bounds the warnings about failed writes.
	sessionStorageWarnEvery = time.Minute
)

type diskTurn struct {
	Service      string         `json:"service"`
	Conversation string         `json:"conversation"`
	Turn         adapter.Turn   `json:"turn"`
	Resource     map[string]any `json:"resource,omitempty"`
	Recorded     time.Time      `json:"recorded"`
}

type diskScored struct {
	Through time.Time `json:"through"` // the recorded time of the last turn scored
}

type sessionDisk struct {
	d      *holdStore
	logger *zap.Logger
	tel    *telemetry

	mu     sync.Mutex
	warned time.Time
}

func sessionHash(k sessions.Key) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(k.Service))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(k.Conversation))
	var b [8]byte
	return hex.EncodeToString(h.Sum(b[:0]))
}

func turnKey(h string, id sessions.TurnID) string {
	return keySessions + h + "/" + hex.EncodeToString(id.TraceID[:]) + hex.EncodeToString(id.SpanID[:])
}

func scoredKey(h string) string { return keySessions + h + "/" + keyScoredSfx }

// failed logs (at most once a minute) and counts a failed operation. The
// turn stays in memory; only its durable copy is missing.
func (sd *sessionDisk) failed(op string, err error) {
	sd.tel.storageErrors.Add(context.Background(), 1, sd.tel.storageOpOpts[op])
	now := time.Now()
	sd.mu.Lock()
	warn := now.Sub(sd.warned) >= sessionStorageWarnEvery
	if warn {
		sd.warned = now
	}
	sd.mu.Unlock()
	if warn {
		sd.logger.Warn("session turns could not be written to storage; they are kept in memory but would not survive a crash (otelcol_processor_eval_storage_errors)",
			zap.String("operation", op), zap.Error(err))
	}
}

// recorded writes the turn just recorded and deletes those max_turns
// pushed out, in one batch.
func (sd *sessionDisk) recorded(r *sessions.Recorded, res pcommon.Resource, now time.Time) {
	h := sessionHash(r.Key)
	b, err := json.Marshal(diskTurn{Service: r.Key.Service, Conversation: r.Key.Conversation, Turn: r.Turn,
		Resource: res.Attributes().AsRaw(), Recorded: now})
	if err != nil {
		sd.failed(storageOpWrite, err)
		return
	}
	ops := make([]*storage.Operation, 0, 1+len(r.DroppedTurns))
	ops = append(ops, storage.SetOperation(turnKey(h, sessions.TurnID{TraceID: r.Turn.TraceID, SpanID: r.Turn.SpanID}), b))
	for _, id := range r.DroppedTurns {
		ops = append(ops, storage.DeleteOperation(turnKey(h, id)))
	}
	if err := sd.d.commit(context.Background(), ops); err != nil {
		sd.failed(storageOpWrite, err)
	}
}

// markScored notes that the session's turns recorded up to through are
// scored.
func (sd *sessionDisk) markScored(k sessions.Key, through time.Time) {
	b, _ := json.Marshal(diskScored{Through: through}) // cannot fail: a time
	if err := sd.d.commit(context.Background(), []*storage.Operation{storage.SetOperation(scoredKey(sessionHash(k)), b)}); err != nil {
		sd.failed(storageOpWrite, err)
	}
}

// removeSession deletes a session's turns and its scored mark.
func (sd *sessionDisk) removeSession(k sessions.Key, ids []sessions.TurnID) {
	h := sessionHash(k)
	ops := make([]*storage.Operation, 0, len(ids)+1)
	for _, id := range ids {
		ops = append(ops, storage.DeleteOperation(turnKey(h, id)))
	}
	ops = append(ops, storage.DeleteOperation(scoredKey(h)))
	if err := sd.d.commit(context.Background(), ops); err != nil {
		sd.failed(storageOpDelete, err)
	}
}

// diskSession is one session as read back.
type diskSession struct {
	key   sessions.Key
	hash  string
	turns []diskTurn
}

// load reads the sessions back into the store (at start, before any turn
// is recorded).
func (sd *sessionDisk) load(ctx context.Context, store *sessions.Store, cfg sessions.Config) {
	byKey := map[sessions.Key]*diskSession{}
	scored := map[string]time.Time{}
	var bad []string
	err := sd.d.walker.Walk(ctx, func(k string, v []byte) ([]*storage.Operation, error) {
		if !strings.HasPrefix(k, keySessions) {
			return nil, nil
		}
		h, id, ok := strings.Cut(k[len(keySessions):], "/")
		if !ok {
			return nil, nil
		}
		if id == keyScoredSfx {
			var ds diskScored
			if json.Unmarshal(v, &ds) == nil {
				scored[h] = ds.Through
			}
			return nil, nil
		}
		var dt diskTurn
		if err := json.Unmarshal(v, &dt); err != nil {
			bad = append(bad, k)
			return []*storage.Operation{storage.DeleteOperation(k)}, nil
		}
		key := sessions.Key{Service: dt.Service, Conversation: dt.Conversation}
		ds := byKey[key]
		if ds == nil {
			ds = &diskSession{key: key, hash: h}
			byKey[key] = ds
		}
		ds.turns = append(ds.turns, dt)
		return nil, nil
	})
	if err != nil {
		sd.logger.Warn("sessions could not be read from storage; they start empty", zap.Error(err))
		sd.tel.storageErrors.Add(ctx, 1, sd.tel.storageOpOpts[storageOpRead])
		return
	}
	if len(bad) > 0 {
		sd.tel.storageErrors.Add(ctx, int64(len(bad)), sd.tel.storageOpOpts[storageOpRead])
		sd.logger.Warn("undecodable session turns in storage were deleted", zap.Int("turns", len(bad)))
	}
	states := make([]sessions.State, 0, len(byKey))
	var trimmed []*storage.Operation
	pending := 0
	for _, ds := range byKey {
		sort.Slice(ds.turns, func(i, j int) bool { return ds.turns[i].Turn.Time.Before(ds.turns[j].Turn.Time) })
		if over := len(ds.turns) - cfg.MaxTurns; over > 0 {
			for _, dt := range ds.turns[:over] {
				trimmed = append(trimmed, storage.DeleteOperation(turnKey(ds.hash, sessions.TurnID{TraceID: dt.Turn.TraceID, SpanID: dt.Turn.SpanID})))
			}
			ds.turns = ds.turns[over:]
		}
		st := sessions.State{Key: ds.key, Turns: make([]adapter.Turn, len(ds.turns))}
		var last time.Time
		for i, dt := range ds.turns {
			st.Turns[i] = dt.Turn
			if !dt.Recorded.Before(last) {
				last = dt.Recorded
				st.Resource = dt.Resource
				if dt.Turn.AgentName != "" {
					st.Agent = dt.Turn.AgentName
				}
			}
		}
		st.Active = last
		st.Pending = last.After(scored[ds.hash])
		if st.Pending {
			pending++
		}
		states = append(states, st)
	}
	if len(trimmed) > 0 {
		if err := sd.d.client.Batch(ctx, trimmed...); err != nil {
			sd.failed(storageOpDelete, err)
		}
	}
	if len(states) == 0 {
		return
	}
	// Least recently active first, as Import wants them.
	sort.Slice(states, func(i, j int) bool { return states[i].Active.Before(states[j].Active) })
	left := store.Import(states)
	for _, st := range states[:left] {
		sd.removeSession(st.Key, turnIDs(st.Turns))
	}
	sd.logger.Info("sessions restored from storage", zap.Int("sessions", len(states)-left),
		zap.Int("pending", pending), zap.Int("beyond_max_sessions", left))
}
