package webhookexporter

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/internal/storageext"
)

// Monitor state across restarts. With a persistent sending queue
// (`sending_queue.storage`), each monitor's groups — their window buckets,
// state, since, last renotify and sample trace ids — are kept in the same
// storage extension under "monitor/<name>": written every saveEvery while
// the exporter runs and at shutdown, read at start. A crash loses at most
// the last saveEvery of cases; a firing group that recovers while the
// collector is down gets its resolved after the restart.

const (
	saveEvery         = 10 * time.Second
	monitorStorageKey = "monitor/"
	// storageName is the exporter's storage client for monitors (the
	// queue's is named after the signal).
	storageName = "monitors"
)

type savedMonitor struct {
	// What the saved groups mean: a monitor whose evaluator, group_by or
	// window changed starts empty.
	Evaluator string        `json:"evaluator"`
	GroupBy   []string      `json:"group_by"`
	Window    time.Duration `json:"window"`
	Groups    []savedGroup  `json:"groups"`
}

type savedGroup struct {
	Values   []string      `json:"values"`
	Version  string        `json:"version,omitempty"`
	Firing   bool          `json:"firing"`
	Since    time.Time     `json:"since"`
	LastSent time.Time     `json:"last_sent"`
	Last     int64         `json:"last"`
	Buckets  []savedBucket `json:"buckets"`
	Samples  []savedSample `json:"samples,omitempty"`
}

type savedBucket struct {
	Epoch        int64   `json:"e"`
	Cases        uint32  `json:"c"`
	Failed       uint32  `json:"f"`
	Scored       uint32  `json:"s"`
	ScoreSum     float64 `json:"sum"`
	ScoreSquares float64 `json:"sq"`
}

type savedSample struct {
	TraceID pcommon.TraceID `json:"trace_id"`
	SpanID  pcommon.SpanID  `json:"span_id"`
	At      int64           `json:"at"`
}

func (m *monitor) fingerprintMatches(s *savedMonitor) bool {
	return s.Evaluator == m.cfg.Evaluator && s.Window == m.cfg.Window && slices.Equal(s.GroupBy, m.cfg.GroupBy)
}

// save returns the monitor's groups with what their windows still hold.
func (m *monitor) save(now time.Time) savedMonitor {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := savedMonitor{Evaluator: m.cfg.Evaluator, GroupBy: m.cfg.GroupBy, Window: m.cfg.Window,
		Groups: make([]savedGroup, 0, len(m.groups))}
	cur := epochOf(now, m.width)
	for _, g := range m.groups {
		sg := savedGroup{Values: g.values, Version: g.version, Firing: g.firing, Since: g.since, LastSent: g.lastSent, Last: g.last}
		for i := range g.win.buckets {
			b := &g.win.buckets[i]
			if b.cases == 0 || b.epoch > cur || b.epoch <= cur-windowBuckets {
				continue
			}
			sg.Buckets = append(sg.Buckets, savedBucket{Epoch: b.epoch, Cases: b.cases, Failed: b.failed,
				Scored: b.scored, ScoreSum: b.scoreSum, ScoreSquares: b.scoreSq})
		}
		for _, sm := range g.samples {
			if sm.at != 0 {
				sg.Samples = append(sg.Samples, savedSample{TraceID: sm.traceID, SpanID: sm.spanID, At: sm.at})
			}
		}
		s.Groups = append(s.Groups, sg)
	}
	return s
}

// restore adds the saved groups (up to max_groups); it returns how many.
func (m *monitor) restore(s *savedMonitor) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, sg := range s.Groups {
		if len(m.groups) >= m.maxGroups || len(sg.Values) != len(m.cfg.GroupBy) {
			continue
		}
		key := strings.Join(sg.Values, "\x00")
		if _, ok := m.groups[key]; ok {
			continue
		}
		g := &group{values: sg.Values, version: sg.Version, last: sg.Last}
		g.firing, g.since, g.lastSent = sg.Firing, sg.Since, sg.LastSent
		for _, b := range sg.Buckets {
			g.win.buckets[uint64(b.Epoch)%windowBuckets] = bucket{epoch: b.Epoch, cases: b.Cases, failed: b.Failed,
				scored: b.Scored, scoreSum: b.ScoreSum, scoreSq: b.ScoreSquares}
		}
		for _, sm := range sg.Samples {
			g.addSample(sample{traceID: sm.TraceID, spanID: sm.SpanID, at: sm.At})
		}
		m.groups[key] = g
		n++
	}
	m.tel.groupsAdded(n)
	return n
}

// monitorStore is the storage client monitors are kept in.
type monitorStore struct {
	client storage.Client
	logger *zap.Logger
}

// openMonitorStore gets a storage client when the sending queue is
// persistent; nil when it is not.
func openMonitorStore(ctx context.Context, host component.Host, cfg *Config, id component.ID, name string, logger *zap.Logger) (*monitorStore, error) {
	if name == "" {
		name = storageName
	}
	if !cfg.QueueConfig.HasValue() || cfg.QueueConfig.Get().StorageID == nil {
		return nil, nil
	}
	client, err := storageext.Client(ctx, host, "sending_queue.storage", *cfg.QueueConfig.Get().StorageID, component.KindExporter, id, name)
	if err != nil {
		return nil, err
	}
	return &monitorStore{client: client, logger: logger}, nil
}

// load restores every monitor's saved groups.
func (s *monitorStore) load(ctx context.Context, ms *monitors) {
	for _, m := range ms.list {
		b, err := s.client.Get(ctx, monitorStorageKey+m.cfg.Name)
		if err != nil || len(b) == 0 {
			if err != nil {
				s.logger.Warn("Monitor state could not be read from storage; the monitor starts empty", zap.String("monitor", m.cfg.Name), zap.Error(err))
			}
			continue
		}
		var sm savedMonitor
		if err := json.Unmarshal(b, &sm); err != nil {
			s.logger.Warn("Monitor state in storage is unreadable; the monitor starts empty", zap.String("monitor", m.cfg.Name), zap.Error(err))
			continue
		}
		if !m.fingerprintMatches(&sm) {
			s.logger.Info("Monitor state in storage is for another evaluator, group_by or window; the monitor starts empty", zap.String("monitor", m.cfg.Name))
			continue
		}
		n := m.restore(&sm)
		firing := 0
		for _, g := range sm.Groups {
			if g.Firing {
				firing++
			}
		}
		s.logger.Info("Monitor state restored from storage", zap.String("monitor", m.cfg.Name), zap.Int("groups", n), zap.Int("firing", firing))
	}
}

// save writes every monitor's groups in one batch.
func (s *monitorStore) save(ctx context.Context, ms *monitors) error {
	now := ms.now()
	ops := make([]*storage.Operation, 0, len(ms.list))
	for _, m := range ms.list {
		b, err := json.Marshal(m.save(now))
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(monitorStorageKey+m.cfg.Name, b))
	}
	return s.client.Batch(ctx, ops...)
}

func (s *monitorStore) close(ctx context.Context, ms *monitors) error {
	err := s.save(ctx, ms)
	if err != nil {
		s.logger.Warn("Monitor state could not be kept in storage; the monitors start empty after the restart", zap.Error(err))
	}
	return errors.Join(err, s.client.Close(ctx))
}
