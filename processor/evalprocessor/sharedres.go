package evalprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// An OTel SDK sends the spans of many traces under one resource: a request
// of a service's spans is one ResourceSpans, often with a dozen resource
// attributes. Holding splits it by trace, and pdata has no way for two
// ResourceSpans to refer to one resource, so each held chunk used to carry
// a copy of it: about 650 bytes a chunk for an SDK's 12 attributes, a
// quarter of what a held span cost, and copying and then comparing them
// again on release (merge.go) a tenth of what holding cost.
//
// Instead, the held chunks split from one ResourceSpans of a request share
// one copy of its resource (chunk.shared, tracePart.shared, routed.shared,
// outItem.shared list it by the position of the ResourceSpans whose own
// resource is left empty). Log records held with their trace do the same
// (chunk.logsShared, logPartHeld.shared, per ResourceLogs); nothing reads
// their resource while they are held. What reads the spans while they are held gets
// the shared copy (heldTrace.spanRefs); what takes the spans out of the
// processor, or changes their ResourceSpans in place, first copies it into
// the ResourceSpans (materialize): the forwarder before it hands a request
// on, giveBack before a refused request is handed back, dropRestored. The
// durable store writes the shared copy in its place (protoWriter). On
// release, chunks that share a copy merge without comparing it.

// sharedResource is one copy of the resource (and schema URL) of a
// request's ResourceSpans (or ResourceLogs), for the held chunks split
// from it. It is never
// changed once made: copies of a chunk (copyForTakeOver) share it too.
type sharedResource struct {
	rs ptrace.ResourceSpans // no scopes: the resource and schema URL only
}

// sharedOf returns the copy of src's resource that the held chunks of
// this request's src (a ResourceSpans or ResourceLogs) share: the
// request's resources are walked in order.
func (k *chunker) sharedOf(src resourceOf) *sharedResource {
	if k.res == nil || k.resSrc != src {
		k.resSrc = src
		k.res = &sharedResource{rs: ptrace.NewResourceSpans()}
		src.Resource().CopyTo(k.res.rs.Resource())
		k.in.resource(k.res.rs.Resource())
		k.res.rs.SetSchemaUrl(src.SchemaUrl())
	}
	return k.res
}

// newRS appends to the chunk a ResourceSpans for spans of src. A held
// chunk's shares k's copy of src's resource; the forwarded part (k.fwd,
// which goes on at once) gets a copy of its own.
func (c *chunk) newRS(src ptrace.ResourceSpans, k *chunker) ptrace.ResourceSpans {
	rss := c.td.ResourceSpans()
	dst := rss.AppendEmpty()
	c.shared = withResource(c.shared, rss.Len(), src, dst, c == k.fwd, k)
	return dst
}

// newRL is newRS for log records.
func (c *chunk) newRL(src plog.ResourceLogs, k *chunker) plog.ResourceLogs {
	rls := c.ld.ResourceLogs()
	dst := rls.AppendEmpty()
	c.logsShared = withResource(c.logsShared, rls.Len(), src, dst, c == k.fwd, k)
	return dst
}

// withResource gives dst, the last of n resources a chunk has, src's
// resource: a copy of its own when own is set, else k's shared copy. It
// returns the chunk's list of shared resources (shared) with dst's entry.
func withResource[R resourceOf](shared []*sharedResource, n int, src, dst R, own bool, k *chunker) []*sharedResource {
	if own {
		copyResource(src, dst)
		if shared != nil {
			shared = append(shared, nil)
		}
		return shared
	}
	dst.SetSchemaUrl(src.SchemaUrl())
	if shared == nil {
		shared = make([]*sharedResource, n-1, n)
	}
	return append(shared, k.sharedOf(src))
}

// ownResource notes that the ResourceSpans just appended to the chunk has
// a resource of its own.
func (c *chunk) ownResource() {
	if c.shared != nil {
		c.shared = append(c.shared, nil)
	}
}

// materialize copies the shared resources into the chunk's ResourceSpans.
func (c *chunk) materialize() {
	materialize(c.td, c.shared)
	c.shared = nil
}

// materializeLogs is materialize for the chunk's log records.
func (c *chunk) materializeLogs() {
	materializeLogs(c.ld, c.logsShared)
	c.logsShared = nil
}

// materialize copies each shared resource into td's ResourceSpans at its
// position: td is then whole, like any other pdata.
func materialize(td ptrace.Traces, shared []*sharedResource) {
	rss := td.ResourceSpans()
	for i, sh := range shared {
		if sh != nil {
			sh.rs.Resource().CopyTo(rss.At(i).Resource())
		}
	}
}

// materializeLogs is materialize for log records.
func materializeLogs(ld plog.Logs, shared []*sharedResource) {
	rls := ld.ResourceLogs()
	for i, sh := range shared {
		if sh != nil {
			sh.rs.Resource().CopyTo(rls.At(i).Resource())
		}
	}
}

// resourceAt is the resource of the i-th ResourceSpans (or ResourceLogs)
// of a chunk, whose own resource is own: its shared copy, or own.
func resourceAt(shared []*sharedResource, i int, own pcommon.Resource) pcommon.Resource {
	if sh := sharedAt(shared, i); sh != nil {
		return sh.rs.Resource()
	}
	return own
}

// resourceSpansAt returns what to read the resource of td's i-th
// ResourceSpans from: its shared copy, or itself.
func resourceSpansAt(rss ptrace.ResourceSpansSlice, shared []*sharedResource, i int) ptrace.ResourceSpans {
	if i < len(shared) && shared[i] != nil {
		return shared[i].rs
	}
	return rss.At(i)
}

// sharedAt is shared[i], nil beyond its end.
func sharedAt(shared []*sharedResource, i int) *sharedResource {
	if i < len(shared) {
		return shared[i]
	}
	return nil
}
