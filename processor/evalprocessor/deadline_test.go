package evalprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A trace's scoring context answers as context.WithDeadline's would: its
// deadline (the parent's when earlier), its parent's values, and its error
// once the deadline has passed, the parent was canceled or it was canceled,
// whether or not anything waited on Done before.
func TestDeadlineContextAnswersAsWithDeadline(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancelParent()
	future := time.Now().Add(time.Hour)

	c, cancel := withDeadline(parent, future)
	assert.NoError(t, c.Err())
	assert.Equal(t, "v", c.Value(ctxKey{}))
	d, ok := c.Deadline()
	assert.True(t, ok)
	assert.Equal(t, future, d)
	done := c.Done()
	assert.False(t, closed(done))
	cancel()
	assert.True(t, closed(done))
	assert.ErrorIs(t, c.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(c), context.Canceled)

	past, cancelPast := withDeadline(parent, time.Now().Add(-time.Millisecond))
	defer cancelPast()
	assert.ErrorIs(t, past.Err(), context.DeadlineExceeded, "expired, though nothing waited")
	assert.True(t, closed(past.Done()), "Done, asked for later, is closed")
	assert.ErrorIs(t, past.Err(), context.DeadlineExceeded)

	early, cancelEarly := withDeadline(parent, future)
	cancelEarly()
	assert.ErrorIs(t, early.Err(), context.Canceled)
	assert.True(t, closed(early.Done()), "canceled before Done was asked for")

	short, cancelShort := context.WithDeadline(parent, time.Now().Add(time.Minute))
	defer cancelShort()
	inner, cancelInner := withDeadline(short, future)
	defer cancelInner()
	d, _ = inner.Deadline()
	sd, _ := short.Deadline()
	assert.Equal(t, sd, d, "the parent's earlier deadline")

	lazy, cancelLazy := withDeadline(parent, future)
	defer cancelLazy()
	cancelParent()
	assert.ErrorIs(t, lazy.Err(), context.Canceled, "the parent's cancellation, nothing waiting")
	assert.True(t, closed(lazy.Done()))
}

// What judges use follows the context without a goroutine of its own:
// context.AfterFunc and a child context see its cancellation.
func TestDeadlineContextCancelsWhatFollowsIt(t *testing.T) {
	c, cancel := withDeadline(context.Background(), time.Now().Add(time.Hour))
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	require.NoError(t, child.Err())
	cancel()
	<-ran
	<-child.Done()
	assert.ErrorIs(t, child.Err(), context.Canceled)

	expired, cancelExpired := withDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancelExpired()
	grand, cancelGrand := context.WithCancel(expired)
	defer cancelGrand()
	<-grand.Done()
	assert.ErrorIs(t, grand.Err(), context.DeadlineExceeded)
}
