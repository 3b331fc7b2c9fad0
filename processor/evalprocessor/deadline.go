package evalprocessor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is context.WithDeadline(parent, deadline) whose timer is
// made only when something waits on it. Every trace is scored under its
// deadline, but deterministic evaluators only ask Err between steps:
// context.WithTimeout armed and stopped a timer and registered with the
// worker pool's context (a lock and a map entry) for each trace, 2-3 % of
// the processor's CPU (bench/procbench). Done and AfterFunc (what
// context.AfterFunc and child contexts use) make the real context, which
// answers for it from then on, so it behaves as the one
// context.WithDeadline returns wherever that can be observed.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time

	mu       sync.Mutex
	real     atomic.Pointer[context.Context] // made by materialize
	stopReal context.CancelFunc
	canceled atomic.Bool // cancel came before real was made
}

// withDeadline returns a deadlineCtx and its cancel function (which must
// be called, as context.WithDeadline's).
func withDeadline(parent context.Context, deadline time.Time) (*deadlineCtx, context.CancelFunc) {
	c := &deadlineCtx{parent: parent, deadline: deadline}
	return c, c.cancel
}

// materialize makes the real context once, canceled already when cancel
// came before it.
func (c *deadlineCtx) materialize() context.Context {
	if r := c.real.Load(); r != nil {
		return *r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.real.Load(); r != nil {
		return *r
	}
	r, stop := context.WithDeadline(c.parent, c.deadline)
	if c.canceled.Load() {
		stop()
	}
	c.stopReal = stop
	c.real.Store(&r)
	return r
}

func (c *deadlineCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canceled.Store(true)
	if c.stopReal != nil {
		c.stopReal()
	}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.materialize().Done() }

// Err is what the real context's Err would say, read without it while
// nothing waits on Done (so no caller can see Err set and Done open).
func (c *deadlineCtx) Err() error {
	if r := c.real.Load(); r != nil {
		return (*r).Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if c.canceled.Load() {
		return context.Canceled
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value asks the parent while nothing waits on Done (the values are the
// parent's; a metric recorded with the context reads its span from it).
// Once Done was asked for, the real context answers, as context's own
// lookups of a cancelable parent expect.
func (c *deadlineCtx) Value(key any) any {
	if r := c.real.Load(); r != nil {
		return (*r).Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc lets context.AfterFunc and contexts derived from this one
// follow it without a goroutine each.
func (c *deadlineCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.materialize(), f)
}
