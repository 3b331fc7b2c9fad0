package evalprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/adapter"
	"github.com/evalbridge/evalbridge/internal/engine"
	"github.com/evalbridge/evalbridge/internal/sessions"
)

// The sessions side (docs/contract.md §14, docs/sessions.md). The engine
// reports each scored trace's turns (agent cases with a conversation id);
// they are kept as compact records in a sessions.Store, never as spans, so
// no span is held longer than its trace. A goroutine of its own hands the
// sessions that have been idle for `idle` (and those evicted beyond
// max_sessions) to the engine, at most maxSessionsInFlight at once; judge
// and remote session evaluators run on the engine's pool, so a slow one
// never holds the loop. Their evaluate_session spans (and result log
// records) go to the forwarder, like released traces. With `storage:` each
// turn is written as it is recorded (sessions_durable.go).

const (
	metricSessionsScored      = "otelcol_processor_eval_sessions_scored"
	metricSessionsHeld        = "otelcol_processor_eval_sessions_held"
	metricSessionTurns        = "otelcol_processor_eval_session_turns"
	metricSessionTurnsDropped = "otelcol_processor_eval_session_turns_dropped"
	metricSessionsUnscored    = "otelcol_processor_eval_sessions_unscored"

	reasonIdle    = "idle"
	reasonBacklog = "backlog"

	// maxSessionsInFlight bounds the sessions being scored at once; due
	// sessions wait in the store (bounded by max_sessions) meanwhile.
	maxSessionsInFlight = 64
)

// sessionState is the processor's sessions side, started only when some
// evaluator has `case: session`. It records the turns the engine reports,
// scores idle and evicted sessions on its own goroutine and hands their
// spans and records to the forwarder.
type sessionState struct {
	// newTicker drives the idle checks; tests replace it (nil: real).
	newTicker func(time.Duration) ticker

	// What it needs of the processor, set at start.
	eng        *engine.Engine
	fwd        *forwarder
	tel        *telemetry
	logger     *zap.Logger
	now        func() time.Time
	timeout    time.Duration
	resultLogs bool
	// multiRoute: eval is in several traces pipelines (keep routes).
	multiRoute bool
	// ctx ends when Shutdown's time is up.
	ctx context.Context

	store *sessions.Store
	disk  *sessionDisk // nil without storage:
	mu    sync.Mutex
	// early are sessions evicted beyond max_sessions, to score now; at most
	// max_sessions of them wait (the oldest beyond are dropped, counted).
	early    []sessions.Snapshot
	maxEarly int
	// maxInFlight bounds the sessions being scored at once (0:
	// maxSessionsInFlight; tests set less).
	maxInFlight int
	slots       chan struct{} // one per session being scored
	wake        chan struct{}
	stop        chan struct{}
	ended       chan struct{}

	// routes is the traces route each session's last turn came through,
	// kept only when eval is in several traces pipelines (routes.go).
	routesMu sync.Mutex
	routes   map[sessions.Key]route

	scored       metric.Int64Counter // by reason: idle, overflow, shutdown
	turns        metric.Int64Counter // turns recorded
	turnsDropped metric.Int64Counter // by reason: shutdown (not scored in time), max_turns, backlog
	unscored     metric.Int64Counter // sessions never scored, by reason: shutdown, backlog
}

// startSessions sets the sessions side up and starts its idle checks, when
// some evaluator has `case: session`.
func (p *evalProcessor) startSessions(ctx context.Context) error {
	if !p.eng.HasSessions() {
		return nil
	}
	if p.sess == nil {
		p.sess = &sessionState{}
	}
	s := p.sess
	if s.newTicker == nil {
		s.newTicker = realClock.newTicker
	}
	s.eng, s.fwd, s.tel, s.logger, s.now = p.eng, p.fwd, p.tel, p.logger, p.clk.now
	s.timeout, s.resultLogs, s.multiRoute, s.ctx = p.cfg.Timeout, p.resultLogsOn(), len(p.routes.traces) > 1, p.runCtx
	s.scored = p.tel.tb.ProcessorEvalSessionsScored
	s.turns = p.tel.tb.ProcessorEvalSessionTurns
	s.turnsDropped = p.tel.tb.ProcessorEvalSessionTurnsDropped
	s.unscored = p.tel.tb.ProcessorEvalSessionsUnscored
	s.store = sessions.NewStore(p.cfg.Sessions, p.eng.MaxFieldBytes())
	s.maxEarly = p.cfg.Sessions.MaxSessions
	if s.maxInFlight <= 0 {
		s.maxInFlight = maxSessionsInFlight
	}
	s.slots = make(chan struct{}, s.maxInFlight)
	if p.store != nil {
		s.disk = &sessionDisk{d: p.store, logger: p.logger, tel: p.tel}
		s.disk.load(ctx, s.store, p.cfg.Sessions)
	}
	s.wake = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.ended = make(chan struct{})
	// The store's size, for the soak and for operators: it rises to the
	// live conversations (up to max_sessions), not with the turns scored.
	store := s.store
	if err := p.tel.tb.RegisterProcessorEvalSessionsHeldCallback(func(_ context.Context, o metric.Int64Observer) error {
		n, _ := store.Len()
		o.Observe(int64(n))
		return nil
	}); err != nil {
		return err
	}
	p.eng.SetTurnOriginSink(s.recordTurn)
	go s.run(s.newTicker(p.cfg.Sessions.TickInterval()))
	return nil
}

// recordTurn is the engine's turn sink; origin is the route of the turn's
// span (heldTrace.origin, passed as engine.ScoreOptions.Origin).
func (s *sessionState) recordTurn(c *adapter.Case, ref adapter.SpanRef, origin any) {
	now := s.now()
	r := s.store.Record(now, c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	if !r.OK {
		return
	}
	if rt, ok := origin.(route); ok && s.multiRoute {
		s.routesMu.Lock()
		if s.routes == nil {
			s.routes = map[sessions.Key]route{}
		}
		s.routes[sessions.Key{Service: c.ServiceName, Conversation: c.ConversationID}] = rt
		s.routesMu.Unlock()
	}
	s.turns.Add(context.Background(), 1)
	if s.disk != nil {
		s.disk.recorded(&r, ref.Resource(), now)
	}
	if r.Dropped > 0 {
		s.turnsDropped.Add(context.Background(), int64(r.Dropped), metric.WithAttributes(attribute.String(attrReason, "max_turns")))
	}
	if r.Evicted == nil {
		if len(r.Removed) > 0 && s.disk != nil {
			s.disk.removeSession(r.Key, r.Removed) // forgotten: every turn was scored
		}
		return
	}
	s.mu.Lock()
	var lost *sessions.Snapshot
	if len(s.early) >= s.maxEarly {
		// The loop is this far behind: the oldest evicted session goes
		// unscored rather than piling up.
		lost = &s.early[0]
		s.early = s.early[1:]
	}
	s.early = append(s.early, *r.Evicted)
	s.mu.Unlock()
	if lost != nil {
		s.unscored.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrReason, reasonBacklog)))
		s.turnsDropped.Add(context.Background(), int64(len(lost.Turns)), metric.WithAttributes(attribute.String(attrReason, reasonBacklog)))
		s.logger.Warn("a session evicted beyond max_sessions is dropped unscored: max_sessions evicted sessions already wait to be scored (otelcol_processor_eval_sessions_unscored)",
			zap.Int("turns", len(lost.Turns)))
		if s.disk != nil {
			s.disk.removeSession(lost.Key, turnIDs(lost.Turns))
		}
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func turnIDs(turns []adapter.Turn) []sessions.TurnID {
	out := make([]sessions.TurnID, len(turns))
	for i := range turns {
		out[i] = sessions.TurnID{TraceID: turns[i].TraceID, SpanID: turns[i].SpanID}
	}
	return out
}

func (s *sessionState) takeEarly() []sessions.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.early
	s.early = nil
	return out
}

// next is the next session to score: an evicted one first, else one that
// has been idle long enough.
func (s *sessionState) next() (sessions.Snapshot, string, bool) {
	s.mu.Lock()
	if len(s.early) > 0 {
		sn := s.early[0]
		s.early[0] = sessions.Snapshot{}
		s.early = s.early[1:]
		s.mu.Unlock()
		return sn, reasonOverflow, true
	}
	s.mu.Unlock()
	if due := s.store.DueN(s.now(), 1); len(due) == 1 {
		return due[0], reasonIdle, true
	}
	return sessions.Snapshot{}, "", false
}

// runSessions scores idle sessions on ticks, and sessions evicted beyond
// max_sessions as soon as they are, while a slot is free; a session that
// finishes frees its slot and wakes the loop.
func (s *sessionState) run(tick ticker) {
	defer close(s.ended)
	defer tick.Stop()
	for {
		select {
		case <-tick.C():
		case <-s.wake:
		case <-s.stop:
			return
		}
		s.dispatch()
	}
}

// dispatch starts scoring sessions while a slot is free and one is
// ready.
func (s *sessionState) dispatch() {
	for {
		select {
		case s.slots <- struct{}{}:
		default:
			return // every slot busy: a finishing session wakes the loop
		}
		sn, reason, ok := s.next()
		if !ok {
			<-s.slots
			return
		}
		s.score(s.ctx, sn, reason)
	}
}

// score scores one session within the trace timeout (and parent)
// and forwards its evaluate_session span and result log records. The
// caller holds a slot; it is given back when the session is done.
func (s *sessionState) score(parent context.Context, sn sessions.Snapshot, reason string) {
	rt := s.takeRoute(sn.Key)
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	s.eng.ScoreSessionAsync(ctx, &sn, rt, func(r engine.SessionReport) {
		defer func() {
			cancel()
			<-s.slots
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}()
		if s.disk != nil {
			if reason == reasonOverflow {
				s.disk.removeSession(sn.Key, turnIDs(sn.Turns)) // out of the store: done with it
			} else {
				s.disk.markScored(sn.Key, sn.Active)
			}
		}
		if !r.Scored() {
			return
		}
		s.scored.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrReason, reason)))
		for i := range r.Evaluations[0].Results {
			s.tel.evaluation(context.Background(), &r.Evaluations[0].Results[i])
		}
		if s.resultLogs {
			ld, n := resultRecords(r.Report, []adapter.SpanRef{r.Ref}, r.Ref.Span.EndTimestamp(), s.eng.RedactInfo)
			if n > 0 {
				s.tel.resultRecords.Add(context.Background(), int64(n))
				s.fwd.pushLogs(routed[plog.Logs]{data: ld, n: n})
			}
		}
		s.fwd.pushTraces(routedTraces{route: rt, data: r.Traces, n: 1})
	})
}

// takeRoute is the route of a session's last turn (forgotten: the next
// turn sets it again).
func (s *sessionState) takeRoute(k sessions.Key) route {
	s.routesMu.Lock()
	defer s.routesMu.Unlock()
	rt := s.routes[k]
	delete(s.routes, k)
	return rt
}

// shutdown, at shutdown once no trace is scored any more, starts
// scoring every session with unscored turns while ctx allows, at most
// maxSessionsInFlight at once (the engine's Shutdown then waits for their
// judges). Those it has no time for are counted
// (otelcol_processor_eval_sessions_unscored{reason="shutdown"}); with
// storage: their turns stay there and they are scored after the next
// start, without it their turn records are dropped (their spans went on
// long ago), counted and logged.
func (s *sessionState) shutdown(ctx context.Context) {
	if s == nil || s.store == nil {
		return
	}
	close(s.stop)
	<-s.ended
	pending := append(s.takeEarly(), s.store.Drain()...)
	var rest []sessions.Snapshot
	for i, sn := range pending {
		select {
		case s.slots <- struct{}{}:
			if ctx.Err() == nil {
				s.score(ctx, sn, reasonShutdown)
				continue
			}
			<-s.slots
		case <-ctx.Done():
		}
		rest = pending[i:]
		break
	}
	if len(rest) == 0 {
		return
	}
	turns := 0
	for _, sn := range rest {
		turns += len(sn.Turns)
	}
	s.unscored.Add(context.Background(), int64(len(rest)), metric.WithAttributes(attribute.String(attrReason, reasonShutdown)))
	if s.disk != nil {
		s.logger.Warn("shutdown's time was up before every session was scored; their turns are kept in storage and they are scored after the next start",
			zap.Int("sessions", len(rest)), zap.Int("turns", turns))
		return
	}
	s.turnsDropped.Add(context.Background(), int64(turns), metric.WithAttributes(attribute.String(attrReason, reasonShutdown)))
	s.logger.Warn("shutdown's time was up before every session was scored; their turn records are dropped (their spans were forwarded already)",
		zap.Int("sessions", len(rest)), zap.Int("turns", turns))
}
