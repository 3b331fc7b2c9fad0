package evalprocessor

import (
	"context"
	"encoding/json"
	"sync"
	"time"

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
// no span is held longer than its trace. A goroutine of its own scores the
// sessions that have been idle for `idle` and hands their evaluate_session
// spans (and result log records) to the forwarder, like released traces.

const (
	metricSessionsScored      = "otelcol_processor_eval_sessions_scored"
	metricSessionTurns        = "otelcol_processor_eval_session_turns"
	metricSessionTurnsDropped = "otelcol_processor_eval_session_turns_dropped"

	reasonIdle = "idle"
)

// sessionState is the processor's sessions side; nil fields mean sessions
// are off (no `case: session` evaluator).
type sessionState struct {
	// newTicker drives the idle checks; tests replace it (nil: real).
	newTicker func(time.Duration) ticker

	store *sessions.Store
	mu    sync.Mutex
	early []sessions.Snapshot // evicted beyond max_sessions, to score now
	wake  chan struct{}
	stop  chan struct{}
	ended chan struct{}

	// routes is the traces route each session's last turn came through,
	// kept only when eval is in several traces pipelines (routes.go).
	routesMu sync.Mutex
	routes   map[sessions.Key]route

	scored       metric.Int64Counter // by reason: idle, overflow, shutdown
	turns        metric.Int64Counter // turns recorded
	turnsDropped metric.Int64Counter // by reason: shutdown (not scored in time), max_turns
}

// startSessions sets the store up and starts the idle checks, when some
// evaluator has `case: session`.
func (p *evalProcessor) startSessions() error {
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
	s.scored = p.tel.tb.ProcessorEvalSessionsScored
	s.turns = p.tel.tb.ProcessorEvalSessionTurns
	s.turnsDropped = p.tel.tb.ProcessorEvalSessionTurnsDropped
	s.store = sessions.NewStore(p.cfg.Sessions, p.eng.MaxFieldBytes())
	p.importSessions(context.Background())
	s.wake = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.ended = make(chan struct{})
	p.eng.SetTurnOriginSink(p.recordTurn)
	tick := s.newTicker(p.cfg.Sessions.TickInterval())
	go p.runSessions(tick)
	return nil
}

// recordTurn is the engine's turn sink; origin is the route of the turn's
// span (see score).
func (p *evalProcessor) recordTurn(c *adapter.Case, ref adapter.SpanRef, origin any) {
	s := p.sess
	r := s.store.Record(p.clk.now(), c, ref.Span.StartTimestamp().AsTime(), ref.Resource())
	if !r.OK {
		return
	}
	if rt, ok := origin.(route); ok && len(p.tracesOut) > 1 {
		s.routesMu.Lock()
		if s.routes == nil {
			s.routes = map[sessions.Key]route{}
		}
		s.routes[sessions.Key{Service: c.ServiceName, Conversation: c.ConversationID}] = rt
		s.routesMu.Unlock()
	}
	s.turns.Add(context.Background(), 1)
	if r.Dropped > 0 {
		s.turnsDropped.Add(context.Background(), int64(r.Dropped), metric.WithAttributes(attribute.String(attrReason, "max_turns")))
	}
	if r.Evicted == nil {
		return
	}
	s.mu.Lock()
	s.early = append(s.early, *r.Evicted)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sessionState) takeEarly() []sessions.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.early
	s.early = nil
	return out
}

// runSessions scores idle sessions on ticks, and sessions evicted beyond
// max_sessions as soon as they are.
func (p *evalProcessor) runSessions(tick ticker) {
	s := p.sess
	defer close(s.ended)
	defer tick.Stop()
	for {
		select {
		case <-tick.C():
			for _, sn := range s.store.Due(p.clk.now()) {
				p.scoreSession(p.runCtx, sn, reasonIdle)
			}
		case <-s.wake:
			for _, sn := range s.takeEarly() {
				p.scoreSession(p.runCtx, sn, reasonOverflow)
			}
		case <-s.stop:
			return
		}
	}
}

// scoreSession scores one session within the trace timeout (and parent)
// and forwards its evaluate_session span and result log records.
func (p *evalProcessor) scoreSession(parent context.Context, sn sessions.Snapshot, reason string) {
	rt := p.sess.takeRoute(sn.Key)
	ctx, cancel := context.WithTimeout(parent, p.cfg.Timeout)
	ctx = engine.WithSpanOrigin(ctx, func(adapter.SpanRef) any { return rt })
	p.eng.ScoreSessionAsync(ctx, &sn, func(r engine.SessionReport) {
		defer cancel()
		if !r.Scored() {
			return
		}
		p.sess.scored.Add(context.Background(), 1, metric.WithAttributes(attribute.String(attrReason, reason)))
		for i := range r.Evaluations[0].Results {
			p.tel.evaluation(context.Background(), &r.Evaluations[0].Results[i])
		}
		if p.resultLogsOn() {
			ld, n := resultRecords(r.Report, []adapter.SpanRef{r.Ref}, r.Ref.Span.EndTimestamp())
			if n > 0 {
				p.tel.resultRecords.Add(context.Background(), int64(n))
				p.fwd.pushLogs(0, ld, n, nil)
			}
		}
		p.fwd.pushTraces(routedTraces{route: rt, td: r.Traces, spans: 1})
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

// stopSessions, at shutdown once no trace is scored any more, scores every
// session with unscored turns while ctx allows; the turns of those it has
// no time for are dropped (records only: their spans went on long ago),
// counted and logged. The engine's Shutdown then waits for their judges.
func (p *evalProcessor) stopSessions(ctx context.Context) {
	s := p.sess
	if s == nil || s.store == nil {
		return
	}
	close(s.stop)
	<-s.ended
	pending := append(s.takeEarly(), s.store.Drain()...)
	dropped := 0
	for _, sn := range pending {
		if ctx.Err() != nil {
			dropped += len(sn.Turns)
			continue
		}
		p.scoreSession(ctx, sn, reasonShutdown)
	}
	if dropped > 0 {
		s.turnsDropped.Add(context.Background(), int64(dropped), metric.WithAttributes(attribute.String(attrReason, reasonShutdown)))
		p.logger.Warn("shutdown's time was up before every session was scored; their turn records are dropped (their spans were forwarded already)",
			zap.Int("turns", dropped))
	}
	p.exportSessions(ctx)
}

// sessionsKey is where the sessions wait in storage between two runs.
const sessionsKey = "sessions"

// exportSessions keeps the sessions' turns in storage (with `storage:`),
// so that a turn after a restart is scored with the whole conversation.
// Written at shutdown; a SIGKILL loses them (spans are never lost).
func (p *evalProcessor) exportSessions(ctx context.Context) {
	if p.store == nil {
		return
	}
	states := p.sess.store.Export()
	if len(states) == 0 {
		return
	}
	b, err := json.Marshal(states)
	if err == nil {
		err = p.store.client.Set(ctx, sessionsKey, b)
	}
	if err != nil {
		p.logger.Warn("sessions could not be kept in storage; they start empty after the restart", zap.Int("sessions", len(states)), zap.Error(err))
		return
	}
	p.logger.Info("sessions kept in storage for the next start", zap.Int("sessions", len(states)))
}

// importSessions restores the sessions an earlier run kept in storage.
func (p *evalProcessor) importSessions(ctx context.Context) {
	if p.store == nil {
		return
	}
	b, err := p.store.client.Get(ctx, sessionsKey)
	if err != nil || len(b) == 0 {
		if err != nil {
			p.logger.Warn("sessions could not be read from storage", zap.Error(err))
		}
		return
	}
	var states []sessions.State
	if err := json.Unmarshal(b, &states); err != nil {
		p.logger.Warn("sessions in storage are unreadable; dropped", zap.Error(err))
	} else {
		left := p.sess.store.Import(states)
		p.logger.Info("sessions restored from storage", zap.Int("sessions", len(states)-left), zap.Int("beyond_max_sessions", left))
	}
	if err := p.store.client.Delete(ctx, sessionsKey); err != nil {
		p.logger.Warn("restored sessions could not be removed from storage", zap.Error(err))
	}
}
